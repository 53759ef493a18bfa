import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // each file builds its own node(s); 2 cores do not gain from more
    maxWorkers: 2,
    minWorkers: 1,
    sequence: { concurrent: false }
  }
})
