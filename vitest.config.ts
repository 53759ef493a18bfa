import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    // stops the in-process nodes a file left running: files share their worker (below)
    setupFiles: ["test/support/leftovers.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // each file builds its own node(s); 2 cores do not gain from more
    maxWorkers: 2,
    minWorkers: 1,
    sequence: { concurrent: false },
    // test files share their worker's modules: each file importing the whole app afresh cost ~1.6 s (250 s of
    // a 650 s run); a file that mocks a module loads what uses it again (vi.resetModules)
    isolate: false
  }
})
