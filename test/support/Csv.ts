/** Parses RFC 4180 CSV (quoted fields, doubled quotes, newlines inside quotes). */
export const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        field += "\""
        i++
      } else if (c === "\"") quoted = false
      else field += c
    } else if (c === "\"") quoted = true
    else if (c === ",") {
      row.push(field)
      field = ""
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++
      row.push(field)
      rows.push(row)
      row = []
      field = ""
    } else field += c
  }
  if (field !== "" || row.length > 0) rows.push([...row, field])
  return rows
}
