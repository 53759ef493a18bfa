import type pg from "pg"
import { Webhook as Verifier } from "standardwebhooks"
import type { RecordedRequest } from "../support/TargetServer.js"

/** Appends `count` events of `type` to the organization's log, in one transaction, as the triggers do. */
export const appendEvents = async (
  db: pg.Pool | pg.ClientBase,
  organizationId: string,
  count: number,
  type = "task.created",
  tag = "t"
) => {
  await db.query(
    `SELECT events_append(ARRAY(
       SELECT ROW($1::uuid, $2::text, NULL::uuid, NULL::uuid, NULL::uuid,
         jsonb_build_object('tag', $4::text, 'n', n), false)::event_draft
       FROM generate_series(1, $3::int) n ORDER BY n))`,
    [organizationId, type, count, tag]
  )
}

/** The request's Standard Webhooks headers, as the `standardwebhooks` library takes them. */
export const headersOf = (r: RecordedRequest) => ({
  "webhook-id": String(r.headers["webhook-id"]),
  "webhook-timestamp": String(r.headers["webhook-timestamp"]),
  "webhook-signature": String(r.headers["webhook-signature"])
})

/** Verifies a received delivery with the reference library; its payload, or throws. */
export const verified = (secret: string, r: RecordedRequest): any =>
  new Verifier(secret).verify(r.body.toString("utf8"), headersOf(r))

export { eventually } from "../support/Poll.js"
