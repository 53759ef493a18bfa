import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import { groupCommand } from "../cli/Help.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "../db/Database.js"
import { AuditVerifier } from "./AuditVerifier.js"

const verify = Command.make(
  "verify",
  {
    organization: Options.text("organization").pipe(
      Options.withPseudoName("ID"),
      Options.withDescription("Check only this organization's chain (its id). Default: every organization."),
      Options.optional
    ),
    json: Options.boolean("json").pipe(Options.withDescription("Print the reports as JSON."))
  },
  ({ json, organization }) =>
    Effect.gen(function*() {
      const verifier = yield* AuditVerifier
      const reports = yield* verifier.verify(Option.getOrUndefined(organization))
      const unknown = Option.isSome(organization) && reports.length === 0
      if (json) yield* Console.log(JSON.stringify(reports))
      else {
        for (const r of reports) {
          yield* Console.log(
            r.broken === undefined
              ? `ok      ${r.organization_id}: ${r.records} record(s), chain intact`
              : `BROKEN  ${r.organization_id}: first broken record is #${r.broken.seq}` +
                `${r.broken.id === null ? "" : ` (${r.broken.id})`}: ${r.broken.reason}`
          )
        }
      }
      if (unknown) yield* Console.error(`No organization ${Option.getOrThrow(organization)}.`)
      if (unknown || reports.some((r) => r.broken !== undefined)) process.exitCode = 1
    }).pipe(
      Effect.provide(AuditVerifier.Default),
      // like `bootstrap`: next to a running embedded node, its PostgreSQL
      Effect.provide(DatabaseForCommandLive.pipe(Layer.provideMerge(SwitchyardConfig.layer)))
    )
).pipe(
  Command.withDescription("Check the audit log's hash chains; report the first broken record (exit code 1 if any).")
)

/** `switchyard audit …` */
export const auditCommand = groupCommand("audit", "The audit log.", [verify])
