import type { ImportContext } from "./ImportContext.js"
import { pointer } from "./ImportContext.js"
import { generatedOperationId, uniqueName } from "./Naming.js"
import type { OperationDraft } from "./Operations.js"

export const label = (draft: OperationDraft) => `${draft.method.toUpperCase()} ${draft.path}`

/**
 * Settles operationIds across the document: declared ones are reserved first (the first declaration
 * of a name keeps it, later ones get `name_2`, …), then missing ones are generated around them.
 */
export const nameOperations = (ctx: ImportContext, drafts: ReadonlyArray<OperationDraft>): Array<string> => {
  const declared = drafts.map((draft) => {
    const value = draft.declaredOperationId
    if (typeof value === "string" && value.trim() !== "") return value
    if (value !== undefined) ctx.warn(pointer(draft.at, "operationId"), "operationId is not a non-empty string")
    return undefined
  })
  const owners = new Map<string, OperationDraft>()
  drafts.forEach((draft, index) => {
    const name = declared[index]
    if (name !== undefined && !owners.has(name)) owners.set(name, draft)
  })
  const taken = new Set(owners.keys())
  const ids = new Map(drafts.map((draft) => [draft.id, draft]))

  return drafts.map((draft, index) => {
    const name = declared[index]
    let operationId: string
    if (name !== undefined && owners.get(name) === draft) {
      operationId = name
    } else if (name !== undefined) {
      operationId = uniqueName(name, taken)
      const first = owners.get(name)!
      ctx.warn(
        pointer(draft.at, "operationId"),
        `duplicate operationId "${name}" (already used by ${label(first)}); renamed to "${operationId}"`
      )
    } else {
      operationId = uniqueName(generatedOperationId(draft.method, draft.path), taken)
      ctx.warn(draft.at, `operationId missing; generated "${operationId}"`)
    }
    taken.add(operationId)
    const shadowed = ids.get(operationId)
    if (shadowed !== undefined && shadowed !== draft) {
      ctx.warn(
        pointer(draft.at, "operationId"),
        `operationId "${operationId}" equals the id of ${label(shadowed)}; lookups by that name are ambiguous`
      )
    }
    return operationId
  })
}
