/** Names derived from a document: operation ids, generated operationIds and human-readable names. */

/** Words of an identifier or path segment: "getPetByID" → get, Pet, By, ID; "user_accounts" → user, accounts. */
const words = (text: string): Array<string> =>
  text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== "")

const capitalize = (word: string) => word.charAt(0).toUpperCase() + word.slice(1)

const pascal = (text: string) => words(text).map((word) => capitalize(word.toLowerCase())).join("")

/** Stable, URL-safe id: `get_pets_petId` for GET /pets/{petId}. */
export const operationSlug = (method: string, path: string): string => {
  const slug = path.replace(/[^A-Za-z0-9-]+/g, "_").replace(/^_+|_+$/g, "")
  return `${method}_${slug === "" ? "root" : slug}`
}

/** camelCase operationId for an operation without one: GET /pets/{petId} → getPetsByPetId. */
export const generatedOperationId = (method: string, path: string): string => {
  const parts = path.split("/").filter((segment) => segment !== "").map((segment) => {
    const parameter = /^\{(.+)\}$/.exec(segment)
    return parameter === null ? pascal(segment) : `By${pascal(parameter[1] ?? "")}`
  })
  const rest = parts.join("")
  return method + (rest === "" ? "Root" : rest)
}

/** "listPets" → "List pets", "get_pet_by_id" → "Get pet by id". */
export const humanize = (name: string): string => capitalize(words(name).map((word) => word.toLowerCase()).join(" "))

/** The first of `base`, `base_2`, `base_3`, … not in `taken`. */
export const uniqueName = (base: string, taken: { has(name: string): boolean }): string => {
  if (!taken.has(base)) return base
  let n = 2
  while (taken.has(`${base}_${n}`)) n++
  return `${base}_${n}`
}
