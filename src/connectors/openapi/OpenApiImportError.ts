/** A document that cannot be imported at all; `pointer` (RFC 6901) locates the offending part ("" = the document). */
export class OpenApiImportError extends Error {
  override readonly name = "OpenApiImportError"
  readonly pointer: string

  constructor(message: string, pointer: string) {
    super(message)
    this.pointer = pointer
  }
}
