/** A small map whose entries expire; for hot-path reads that may lag a write by at most `ttlMs`. */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { readonly value: V; readonly expires: number }>()
  constructor(private readonly ttlMs: number, private readonly maxEntries = 10_000) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expires <= Date.now()) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  set(key: K, value: V): V {
    if (this.ttlMs <= 0) return value
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as K)
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs })
    return value
  }

  delete(key: K): void {
    this.entries.delete(key)
  }
}
