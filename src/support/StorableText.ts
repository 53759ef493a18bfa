/**
 * Text PostgreSQL stores as given, at most `max` UTF-16 units: without NUL (text and jsonb refuse it), and
 * not cut inside a surrogate pair (jsonb refuses the half left; text would store U+FFFD for it).
 */
export const storableText = (value: string | null | undefined, max: number): string | null => {
  if (value === undefined || value === null) return null
  const text = value.replaceAll("\u0000", "")
  if (text.length <= max) return text
  const cut = text.charCodeAt(max - 1)
  return text.slice(0, cut >= 0xd800 && cut <= 0xdbff ? max - 1 : max)
}
