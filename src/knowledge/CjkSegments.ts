/**
 * Chinese, Japanese and Korean text has no spaces between words, so PostgreSQL's parser reads a whole sentence
 * as one word and no query finds it. Both what is indexed and what is searched are therefore cut into
 * overlapping two-character pieces (bigrams, as Lucene's CJK analyzer does): `東京都` is indexed as
 * `東京 京都`, and a query `東京都` becomes the phrase `"東京 京都"`. A query of one such character finds
 * nothing. Pure.
 */

// letters of the scripts, with the iteration mark and the long-vowel mark (script Common) they are written with
const RUN = "[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3005\\u30fc]+"
// CJK and full-width punctuation: word breaks (PostgreSQL reads them as letters in some locales)
const PUNCTUATION = "[\\u3000-\\u303f\\uff01-\\uff0f\\uff1a-\\uff20\\uff3b-\\uff40\\uff5b-\\uff65]"
const PARTS = new RegExp(`(${RUN})|${PUNCTUATION}`, "gu")
const ANY = new RegExp(`${RUN}|${PUNCTUATION}`, "u")

const bigrams = (run: string): Array<string> => {
  const chars = [...run]
  return chars.length <= 2 ? [run] : chars.slice(0, -1).map((c, i) => c + chars[i + 1])
}

/** The text as it is indexed: undefined when it has no CJK (the text itself is). */
export const indexedText = (text: string): string | undefined =>
  ANY.test(text)
    ? text.replace(PARTS, (_, run?: string) => run === undefined ? " " : ` ${bigrams(run).join(" ")} `)
    : undefined

/**
 * A web-search query with its CJK runs cut the same way, each a phrase (inside a quoted phrase already, the
 * pieces join it).
 */
export const searchedQuery = (query: string): string => {
  if (!ANY.test(query)) return query
  let quoted = false
  let out = ""
  let at = 0
  for (const match of query.matchAll(PARTS)) {
    const before = query.slice(at, match.index)
    quoted = (before.split("\"").length - 1) % 2 === 1 ? !quoted : quoted
    out += before
    at = match.index + match[0].length
    const run = match[1]
    if (run === undefined) {
      out += " "
      continue
    }
    const pieces = bigrams(run)
    // a `-` right before a run excludes it: kept next to it
    const gap = out === "" || /[\s"-]$/.test(out) ? "" : " "
    out += pieces.length === 1 || quoted ? `${gap}${pieces.join(" ")} ` : `${gap}"${pieces.join(" ")}" `
  }
  return out + query.slice(at)
}
