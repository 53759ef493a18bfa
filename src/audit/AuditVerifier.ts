import { Effect } from "effect"
import type { OrganizationId } from "../../schema/Ids.js"
import { GENESIS_HASH, hashRecord } from "./AuditChain.js"
import { AuditRepo } from "./AuditRepo.js"

export interface ChainReport {
  readonly organization_id: OrganizationId
  readonly records: number
  /** The first record that does not fit the chain, and why; absent when the chain is intact. */
  readonly broken?: {
    readonly seq: number
    readonly id: string | null
    readonly reason: string
  }
}

const PAGE = 1000

/** Walks each organization's chain in order, a page at a time, and stops at the first broken link. */
export class AuditVerifier extends Effect.Service<AuditVerifier>()("audit/AuditVerifier", {
  effect: Effect.gen(function*() {
    const repo = yield* AuditRepo

    const verifyOrganization = Effect.fn("AuditVerifier.verifyOrganization")(function*(organizationId: OrganizationId) {
      let expectedSeq = 1
      let prevHash = GENESIS_HASH
      const fail = (seq: number, id: string | null, reason: string): ChainReport => ({
        organization_id: organizationId,
        records: expectedSeq - 1,
        broken: { seq, id, reason }
      })
      for (;;) {
        const rows = yield* repo.pageAscending(organizationId, {}, expectedSeq - 1, PAGE)
        for (const row of rows) {
          if (row.seq !== expectedSeq) {
            return fail(expectedSeq, null, `record ${expectedSeq} is missing (the next one is ${row.seq})`)
          }
          if (row.prev_hash !== prevHash) {
            return fail(row.seq, row.id, "its prev_hash is not the previous record's hash")
          }
          if (hashRecord(row) !== row.hash) {
            return fail(row.seq, row.id, "its contents do not match its hash (the record was changed)")
          }
          prevHash = row.hash
          expectedSeq++
        }
        if (rows.length < PAGE) break
      }
      const head = yield* repo.head(organizationId)
      const last = expectedSeq - 1
      if (head === undefined && last > 0) {
        return fail(
          last,
          null,
          "the chain's head is missing, so its newest records cannot be checked (records removed?)"
        )
      }
      if (head !== undefined && head.seq > last) {
        return fail(last + 1, null, `the chain ends at record ${last} but ${head.seq} were written (records removed)`)
      }
      if (head !== undefined && head.seq < last) {
        return fail(head.seq + 1, null, `records after #${head.seq} were not written by the audit log`)
      }
      if (head !== undefined && head.hash !== prevHash) {
        return fail(last, null, "it is not the record the audit log wrote last (replaced)")
      }
      return { organization_id: organizationId, records: last } satisfies ChainReport
    })

    /** Every organization, or only `organization`. */
    const verify = Effect.fn("AuditVerifier.verify")(function*(organization?: string) {
      const ids = yield* repo.organizations(organization)
      return yield* Effect.forEach(ids, verifyOrganization)
    })

    return { verify, verifyOrganization } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
