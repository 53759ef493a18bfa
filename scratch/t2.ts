import { Schema } from "effect"
import { CreateApiKey } from "../schema/Identity.ts"
const deep = JSON.parse("[".repeat(5000) + "]".repeat(5000))
try { const r = Schema.decodeUnknownEither(CreateApiKey)(deep); console.log(r._tag, r._tag === "Left" ? r.left.message.slice(0, 100) : "") } catch (e) { console.log("throw", String(e)) }
