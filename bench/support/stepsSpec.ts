/**
 * A connector with one operation, `step` (`GET /steps/{id}`), on `url`: the tool the benches' agents call
 * (bench/cluster.ts's failover tasks, bench/support/toolCallTasks.ts).
 */
export const stepsSpec = (url: string) => ({
  openapi: "3.0.3",
  info: { title: "Steps", version: "1" },
  servers: [{ url }],
  paths: {
    "/steps/{id}": {
      get: {
        operationId: "step",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "ok" } }
      }
    }
  }
})
