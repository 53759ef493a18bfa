import { afterAll } from "vitest"
import { liveNodes } from "./TestNode.js"

// Runs last after each test file (vitest runs "after" hooks in reverse): stops the in-process nodes the file
// left running, so they do not go on under the next files of the same worker, and says which.
afterAll(async () => {
  if (liveNodes.size === 0) return
  const left = [...liveNodes]
  liveNodes.clear()
  console.warn(
    `LEFTOVER: ${left.length} in-process node(s) still running at the file's end: ${
      left.map(([url]) => url).join(", ")
    }`
  )
  await Promise.all(left.map(([, stop]) => stop().catch(() => undefined)))
})
