import * as Fs from "node:fs"
import * as Os from "node:os"

/**
 * Puts the calling thread below the node's own (nice 10): a worker thread busy for seconds (a function that
 * spins, a large PDF) yields the CPU to the node's requests. Linux sets a nice value per thread (setpriority
 * on the thread id); elsewhere the thread keeps the node's priority.
 */
export const lowerThreadPriority = () => {
  try {
    const tid = Number(Fs.readlinkSync("/proc/thread-self").split("/").at(-1))
    if (Number.isInteger(tid) && tid > 0) Os.setPriority(tid, 10)
  } catch {
    // not Linux
  }
}
