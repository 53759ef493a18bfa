const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether a string is a UUID as PostgreSQL's `uuid` reads it: checked first, so a bad id is a 404 or a 400, never a failed cast. */
export const isUuid = (s: string) => UUID.test(s)
