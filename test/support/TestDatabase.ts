import * as Crypto from "node:crypto"
import pg from "pg"
import { inject } from "vitest"

const createDatabase = async (template: string | undefined): Promise<string> => {
  const base = inject("databaseUrl")
  const name = `t_${Crypto.randomBytes(6).toString("hex")}`
  const client = new pg.Client({ connectionString: base })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}${template === undefined ? "" : ` TEMPLATE ${template}`}`)
  } finally {
    await client.end()
  }
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** A fresh, empty database on the run's PostgreSQL: each test node gets its own cluster tables. */
export const freshDatabase = (): Promise<string> => createDatabase(undefined)

/**
 * A fresh database with every migration already applied (a copy of the run's template, globalSetup.ts):
 * what a node's database is after its first start. Empty when the run has no template.
 */
export const migratedDatabase = (): Promise<string> => createDatabase(inject("migratedTemplate"))
