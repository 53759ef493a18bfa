import * as Crypto from "node:crypto"
import pg from "pg"
import { inject } from "vitest"

/** A fresh, empty database on the run's PostgreSQL: each test node gets its own cluster tables. */
export const freshDatabase = async (): Promise<string> => {
  const base = inject("databaseUrl")
  const name = `t_${Crypto.randomBytes(6).toString("hex")}`
  const client = new pg.Client({ connectionString: base })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}
