import { Schema } from "effect"
import { CreateApiKey } from "../schema/Identity.ts"
const r = Schema.decodeUnknownEither(CreateApiKey)({ kind: "wizard" })
console.log(JSON.stringify(r._tag === "Left" ? r.left.message : r))
const r2 = Schema.decodeUnknownEither(CreateApiKey, { errors: "all" })({ kind: "wizard" })
console.log(JSON.stringify(r2._tag === "Left" ? r2.left.message : r2))
