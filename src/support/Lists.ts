/**
 * Whether two lists hold the same items in the same order (`same` compares two items; `===` by default): how a
 * change tells that the list it was sent is the one held already, and writes nothing.
 */
export const sameList = <A>(
  a: ReadonlyArray<A>,
  b: ReadonlyArray<A>,
  same: (x: A, y: A) => boolean = (x, y) => x === y
): boolean => a.length === b.length && a.every((x, i) => same(x, b[i]!))
