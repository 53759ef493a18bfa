import type pg from "pg"
import { v7 as uuidV7 } from "uuid"

/**
 * The database work a task stands for, done directly: INSERT pending, UPDATE executing, UPDATE
 * completed (three autocommit statements, each on a connection from the pool). The same-run baseline
 * of bench/tasks.ts and bench/cluster.ts. Its ids are UUIDv7, as task ids are: the same commits, keyed
 * the same way (random ids cost it about 3%).
 */
export const commitBaseline = async (pool: pg.Pool, table = "bench_baseline_tasks") => {
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await pool.query(
    `CREATE TABLE ${table} (id uuid PRIMARY KEY, status text, result text,
       created_at timestamptz DEFAULT now(), finished_at timestamptz)`
  )
  return {
    /** One task's three commits. */
    sequence: async (): Promise<void> => {
      const id = uuidV7()
      await pool.query(`INSERT INTO ${table} (id, status) VALUES ($1, 'pending')`, [id])
      await pool.query(`UPDATE ${table} SET status = 'executing' WHERE id = $1`, [id])
      await pool.query(`UPDATE ${table} SET status = 'completed', result = $2, finished_at = now() WHERE id = $1`, [
        id,
        "done"
      ])
    },
    drop: () => pool.query(`DROP TABLE IF EXISTS ${table}`).then(() => undefined)
  }
}
