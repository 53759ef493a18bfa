import { Effect } from "effect"
import type { UserId } from "../../schema/Ids.js"
import type { AuditEntry, AuditLog } from "../audit/AuditLog.js"
import type { OAuthRepo } from "../oauth/OAuthRepo.js"
import { decoyHash, verifyPassword } from "../oauth/Passwords.js"
import type { RateLimits, Refusal } from "../security/RateLimits.js"

/**
 * Password sign-in as the sign-in page and the console share it: one check (a decoy hash for an unknown
 * account, so that timing does not tell which exist) and one lock record.
 */
export const checkPassword = (
  repo: OAuthRepo,
  audit: AuditLog,
  email: string,
  password: string,
  via: "console" | "authorization"
) =>
  Effect.gen(function*() {
    const row = yield* repo.findPassword(email.trim())
    const matches = yield* Effect.promise(() =>
      row === undefined
        ? decoyHash().then((h) => verifyPassword(password, h)).then(() => false)
        : verifyPassword(password, row.hash)
    )
    // an account's sign-ins, good and bad, go to its organizations' audit logs (a SIEM watches for guessing);
    // an unknown e-mail belongs to no organization
    if (row !== undefined) {
      yield* recordForAccount(repo, audit, row.user_id, {
        action: "PASSWORD_SIGN_IN",
        outcome: matches ? "success" : "denied",
        details: matches ? { via } : { via, reason: "wrong_password" }
      })
    }
    return matches && row !== undefined ? row.user_id : undefined
  })

/** Once per window, each organization of a locked account learns that someone is guessing its password. */
export const recordLock = (
  repo: OAuthRepo,
  audit: AuditLog,
  limits: RateLimits,
  email: string,
  refused: Refusal
) =>
  Effect.gen(function*() {
    if (!refused.firstOfWindow || refused.tally.limit.name !== "password_account") return
    const user = yield* repo.findPassword(email.trim())
    if (user === undefined) return
    yield* recordForAccount(repo, audit, user.user_id, {
      action: "RATE_LIMITED",
      outcome: "denied",
      details: { code: "rate_limited", message: refused.message, ...limits.detailsOf(refused.tally) }
    })
  })

/** An entry about an account, acted on by its user, in each of its organizations' audit logs. */
const recordForAccount = (
  repo: OAuthRepo,
  audit: AuditLog,
  userId: UserId,
  entry: Pick<AuditEntry, "action" | "outcome" | "details">
) =>
  Effect.gen(function*() {
    for (const organization of yield* repo.organizationsOf(userId)) {
      yield* audit.record(
        { organizationId: organization.id, actor: { type: "user", id: userId, key_id: null } },
        { ...entry, targets: [{ type: "user", id: userId }] }
      ).pipe(Effect.ignoreLogged)
    }
  })
