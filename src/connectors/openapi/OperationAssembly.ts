import type { ImportedOperation } from "./ImportedConnector.js"
import { inputSchema, standalone } from "./InputSchema.js"
import { humanize } from "./Naming.js"
import { label } from "./OperationNames.js"
import type { OperationDraft } from "./Operations.js"
import type { SchemaConverter } from "./SchemaConverter.js"

/** The final operation, once the converter is sealed and the operationId settled. */
export const assembleOperation = (
  converter: SchemaConverter,
  draft: OperationDraft,
  operationId: string
): ImportedOperation => {
  const parameters = draft.parameters.map(({ core, parameter }) => ({ parameter, schema: converter.finish(core) }))
  const body = draft.body === null ? null : { required: draft.body.required, schema: converter.finish(draft.body.core) }
  return {
    id: draft.id,
    operationId,
    method: draft.method,
    path: draft.path,
    pretty_name: draft.summary?.trim() ?? humanize(operationId),
    pretty_description: draft.description ?? draft.summary ?? label(draft),
    tags: draft.tags,
    parameters: parameters.map(({ parameter, schema }) => ({
      ...parameter,
      schema: standalone(converter, schema, draft.at)
    })),
    body: draft.body === null || body === null ? null : {
      contentType: draft.body.contentType,
      required: body.required,
      schema: standalone(converter, body.schema, draft.at),
      ...(draft.body.encoding === undefined ? {} : { encoding: draft.body.encoding })
    },
    security: draft.security,
    ...(draft.servers.length > 0 ? { servers: draft.servers } : {}),
    input: inputSchema(converter, parameters, body, draft.at)
  }
}
