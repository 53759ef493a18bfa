/**
 * A protobuf wire-format writer into one growing Buffer, for the OTLP trace export (SpanEncoding.ts). A nested
 * message reserves one byte for its length and, in the rare case its body outgrows 127 bytes, moves the body
 * up to fit the longer varint: one memmove instead of the per-message arrays and copies a generic writer
 * (@bufbuild/protobuf's BinaryWriter) makes for every field. Short ASCII strings are copied by hand: a native
 * call costs more than the loop for a key like `http.request.method`.
 */
export const varintSize = (n: number) => {
  let size = 1
  for (; n >= 0x80; n = Math.floor(n / 0x80)) size++
  return size
}

export class ProtoWriter {
  private buf: Buffer
  private pos = 0

  constructor(capacity = 4096) {
    this.buf = Buffer.allocUnsafe(capacity)
  }

  private ensure(n: number) {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  /** An unsigned varint of up to 2^53. */
  varint(n: number) {
    this.ensure(10)
    const buf = this.buf
    let pos = this.pos
    while (n >= 0x80) {
      buf[pos++] = (n % 0x80) | 0x80
      n = Math.floor(n / 0x80)
    }
    buf[pos++] = n
    this.pos = pos
  }

  tag(field: number, wireType: 0 | 1 | 2 | 5) {
    this.varint(field * 8 + wireType)
  }

  /** int64 as protobuf writes it: a negative number as its 64-bit two's complement (ten bytes). */
  int64(n: number | bigint) {
    if (typeof n === "number" && n >= 0) return this.varint(n)
    let v = BigInt.asUintN(64, BigInt(n))
    this.ensure(10)
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80
      v >>= 7n
    }
    this.buf[this.pos++] = Number(v)
  }

  bool(b: boolean) {
    this.ensure(1)
    this.buf[this.pos++] = b ? 1 : 0
  }

  double(n: number) {
    this.ensure(8)
    this.pos = this.buf.writeDoubleLE(n, this.pos)
  }

  fixed64(n: bigint) {
    this.ensure(8)
    this.pos = this.buf.writeBigUInt64LE(n >= 0n ? n : BigInt.asUintN(64, n), this.pos)
  }

  fixed32(n: number) {
    this.ensure(4)
    this.pos = this.buf.writeUInt32LE(n >>> 0, this.pos)
  }

  /** A length-delimited UTF-8 string. */
  string(s: string) {
    const n = s.length
    if (n < 128) {
      this.ensure(n + 1)
      const buf = this.buf
      const start = this.pos
      let i = 0
      for (; i < n; i++) {
        const c = s.charCodeAt(i)
        if (c >= 0x80) break
        buf[start + 1 + i] = c
      }
      if (i === n) {
        buf[start] = n
        this.pos = start + 1 + n
        return
      }
    }
    const bytes = Buffer.byteLength(s, "utf8")
    this.varint(bytes)
    this.ensure(bytes)
    this.pos += this.buf.write(s, this.pos, bytes, "utf8")
  }

  /** Length-delimited bytes from their hex form (trace and span ids). */
  hexBytes(hex: string) {
    const n = (hex.length >>> 1) & 0x7f
    this.ensure(n + 1)
    // a malformed id (from a remote parent or a link) writes fewer bytes: the length says how many
    const written = this.buf.write(hex, this.pos + 1, n, "hex")
    this.buf[this.pos] = written
    this.pos += 1 + written
  }

  /** Starts a nested message: returns where its length goes, for `end`. */
  begin(): number {
    this.ensure(1)
    return this.pos++
  }

  end(at: number) {
    const length = this.pos - at - 1
    if (length < 0x80) {
      this.buf[at] = length
      return
    }
    const size = varintSize(length)
    this.ensure(size - 1)
    const buf = this.buf
    buf.copy(buf, at + size, at + 1, this.pos)
    let pos = at
    for (let l = length; l >= 0x80; l = Math.floor(l / 0x80)) buf[pos++] = (l % 0x80) | 0x80
    buf[pos] = Math.floor(length / 0x80 ** (size - 1))
    this.pos = at + size + length
  }

  raw(bytes: Uint8Array) {
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
  }

  /** Forgets what was written from `at` on. */
  truncate(at: number) {
    this.pos = Math.min(at, this.pos)
  }

  /** Bytes written so far. */
  get length() {
    return this.pos
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos)
  }
}
