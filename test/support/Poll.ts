/**
 * Polls `check` until it returns something other than undefined, and returns that; fails after `ms`,
 * naming `what`. The tests' one polling loop: the areas' helpers (`until`, `eventually`) are this.
 */
export const eventually = async <A>(
  check: () => A | undefined | Promise<A | undefined>,
  ms = 15_000,
  what = "the condition",
  everyMs = 25
): Promise<A> => {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
