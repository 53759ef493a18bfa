import { Command, Options } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Console, Effect, Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.js"
import { groupCommand } from "../cli/Help.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "../db/Database.js"
import { migrate } from "../db/Migrations.js"
import { transactionIn } from "../db/Transaction.js"
import { OAuthRepo } from "./OAuthRepo.js"
import { hashPassword, MIN_PASSWORD_LENGTH } from "./Passwords.js"

/** The whole of standard input: a password never appears in argv (visible in `ps`) or shell history. */
const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "")
})

const setPassword = Command.make(
  "set-password",
  {
    email: Options.text("email").pipe(
      Options.withPseudoName("EMAIL"),
      Options.withDescription("E-mail of the user (an existing member).")
    )
  },
  ({ email }) =>
    Effect.gen(function*() {
      const password = yield* readStdin
      if (password.length < MIN_PASSWORD_LENGTH) {
        // the CLI prints what goes to Console.error as `error: …` (src/cli/Terminal.ts); a short password is wrong
        // use: exit 2 (docs/reference/cli.md, "Exit codes")
        yield* Console.error(`the password (read from standard input) needs ${MIN_PASSWORD_LENGTH}+ characters`)
        return yield* Effect.sync(() => void (process.exitCode = 2))
      }
      yield* migrate
      const repo = yield* OAuthRepo
      const audit = yield* AuditLog
      const hash = yield* Effect.promise(() => hashPassword(password))
      // a sign-in credential changed: the sessions the old password opened end, and so do the MCP authorizations
      // given in them (a reset is how a leaked one is shut out); each of the person's organizations records it
      // (never the password)
      const changed = yield* repo.setPassword(email, hash).pipe(
        Effect.flatMap((id) =>
          id === undefined ? Effect.succeed(undefined) : Effect.gen(function*() {
            const sessionsEnded = yield* repo.endPasswordSessions(id)
            const grants = yield* repo.endSignInGrants({ password: id })
            const organizations = yield* repo.organizationsOf(id)
            yield* Effect.forEach(organizations, (organization) =>
              audit.record({ organizationId: organization.id, actor: { type: "system", id: "cli", key_id: null } }, {
                action: "SET_PASSWORD",
                targets: [{ type: "user", id, name: email }],
                details: {
                  sessions_ended: sessionsEnded,
                  revoked_authorizations: grants.filter((g) => g.organization_id === organization.id).map((g) =>
                    g.id
                  )
                }
              }), { discard: true })
            return { sessionsEnded, grantsRevoked: grants.length }
          })
        ),
        transactionIn(yield* SqlClient.SqlClient)
      )
      if (changed === undefined) {
        yield* Console.error(`no user has the e-mail ${email}`)
        return yield* Effect.sync(() => void (process.exitCode = 1))
      }
      const ended = changed.sessionsEnded
      const revoked = changed.grantsRevoked
      yield* Console.log(
        `Password set for ${email}: they can now sign in to the console (/console) and authorize MCP clients.` +
          (ended === 0
            ? ""
            : ` ${ended} session${ended === 1 ? "" : "s"} signed in with the old password ended.`) +
          // their clients must be authorized again; nodes drop cached tokens within SWITCHYARD_API_KEY_CACHE_TTL
          (revoked === 0
            ? ""
            : ` ${revoked} MCP authorization${revoked === 1 ? "" : "s"} given with it revoked.`)
      )
    }).pipe(
      Effect.provide([OAuthRepo.Default, AuditLog.Default]),
      Effect.provide(DatabaseForCommandLive.pipe(Layer.provideMerge(SwitchyardConfig.layer)))
    )
).pipe(Command.withDescription("Set a user's sign-in password, read from standard input."))

export const usersCommand = groupCommand("users", "Manage users' sign-in.", [setPassword])
