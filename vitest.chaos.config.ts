import { defineConfig } from "vitest/config"

// `npm run test:chaos`: the long fault tests, outside `npm test`
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.chaos.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    hookTimeout: 120_000,
    maxWorkers: 1,
    minWorkers: 1
  }
})
