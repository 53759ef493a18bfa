import { configDefaults, defineConfig } from "vitest/config"

/**
 * Files that need a module registry of their own: `vi.mock` is scoped to its file only by the per-file
 * reset that isolation does; the console's browser journeys keep the isolation they were written with.
 */
const ISOLATED = ["test/connectors/egress/GuardedLookup.test.ts", "test/console/**/*.test.ts"]

export default defineConfig({
  test: {
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // each file builds its own node(s); 2 cores do not gain from more
    maxWorkers: 2,
    minWorkers: 1,
    sequence: { concurrent: false },
    // a worker keeps the modules it loaded for its next file: importing the sources (hundreds of modules
    // through vite-node) again for each file was about half the CPU of a file. (Read for the whole pool
    // here, not per project; a project's own `isolate` still resets its modules and mocks per file.)
    isolate: false,
    projects: [
      {
        extends: true,
        test: {
          name: "switchyard",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...ISOLATED]
        }
      },
      { extends: true, test: { name: "isolated", include: ISOLATED, isolate: true } }
    ]
  }
})
