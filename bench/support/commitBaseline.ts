import type pg from "pg"

/**
 * The database work a task stands for, done directly: INSERT pending, UPDATE executing, UPDATE
 * completed (three autocommit statements, each on a connection from the pool). The same-run baseline
 * of bench/tasks.ts and bench/cluster.ts.
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
      const id = crypto.randomUUID()
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
