import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // each file builds its own node(s); 2 cores do not gain from more
    maxWorkers: 2,
    minWorkers: 1,
    sequence: { concurrent: false },
    // The pool reads this one: a worker process runs file after file, so node_modules (Effect and the rest,
    // loaded natively) are loaded once per worker instead of once per file, with a process started for
    // each: that was about half the CPU of a file.
    isolate: false,
    projects: [
      {
        extends: true,
        test: {
          name: "switchyard",
          include: ["test/**/*.test.ts"],
          // ...while each file still gets our modules (src/, schema/, test/) and its vi.mock afresh: several
          // keep state per process (src/http/RouteTable.ts's extra routes) that a file must not inherit
          isolate: true
        }
      }
    ]
  }
})
