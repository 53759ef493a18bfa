import type * as Pg from "pg"

const CANCEL = /^SELECT pg_cancel_backend\((\d+)\)$/

/**
 * @effect/sql-pg stops an interrupted statement with `SELECT pg_cancel_backend(pid)`, sent on another pooled
 * connection: best effort, and under load late (it waits for a free connection, up to 5 s, while the
 * interrupted connection is released and taken by another caller). The signal then cancels whatever that
 * connection runs by then: another request's statement (seen: an audit record in another request, a 500).
 * So the interrupted statement's connection is closed when its cancel is asked for: its backend ends with the
 * statement and runs nothing of anyone else's, and the pool opens a new connection in its place. The cancel is
 * still sent, to stop the statement at once.
 */
export const closeCancelledConnections = (pool: Pg.Pool) => {
  const byProcess = new Map<number, Pg.PoolClient>()
  const processOf = (client: Pg.PoolClient) => (client as unknown as { processID?: number }).processID
  pool.on("connect", (client) => {
    const pid = processOf(client as Pg.PoolClient)
    if (pid !== undefined) byProcess.set(pid, client as Pg.PoolClient)
  })
  pool.on("remove", (client) => {
    const pid = processOf(client as Pg.PoolClient)
    if (pid !== undefined && byProcess.get(pid) === client) byProcess.delete(pid)
  })
  const query = pool.query.bind(pool) as (...args: Array<unknown>) => unknown
  pool.query = ((...args: Array<unknown>) => {
    const pid = typeof args[0] === "string" ? CANCEL.exec(args[0])?.[1] : undefined
    const client = pid === undefined ? undefined : byProcess.get(Number(pid))
    if (client !== undefined) {
      byProcess.delete(Number(pid))
      // released afterwards by its caller, an ended client leaves the pool (pg-pool removes it)
      client.end().catch(() => undefined)
    }
    return query(...args)
  }) as typeof pool.query
  return pool
}
