/**
 * A protobuf wire-format writer into one growing Buffer, for the OTLP trace export (SpanEncoding.ts). A nested
 * message reserves room for its length (one byte, or two for a span, which is nearly always 128 to 16383 bytes)
 * and, in the rare case its body does not fit that, moves the body to fit (one `copyWithin`) instead of the
 * per-message arrays and copies a generic writer (@bufbuild/protobuf's BinaryWriter) makes for every field.
 * Short ASCII strings and ids are copied by hand, and fixed-width numbers go through a DataView: a call into
 * Node's Buffer methods (argument checks, bigint splitting) costs more than the bytes.
 */
export const varintSize = (n: number) => {
  let size = 1
  for (; n >= 0x80; n = Math.floor(n / 0x80)) size++
  return size
}

export class ProtoWriter {
  private buf: Buffer
  private view: DataView
  private pos: number

  /** `headroom`: bytes left free ahead of what is written, for a header put there later (`writeBefore`). */
  constructor(capacity = 4096, headroom = 0) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, headroom + 16))
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length)
    this.pos = headroom
  }

  private ensure(n: number) {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer, next.byteOffset, next.length)
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
    const key = field * 8 + wireType
    if (key < 0x80) {
      this.ensure(1)
      this.buf[this.pos++] = key
    } else {
      this.varint(key)
    }
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
    this.view.setFloat64(this.pos, n, true)
    this.pos += 8
  }

  /** A 64-bit little-endian integer; a negative one as its two's complement. */
  fixed64(n: bigint) {
    this.ensure(8)
    this.view.setBigUint64(this.pos, n, true)
    this.pos += 8
  }

  fixed32(n: number) {
    this.ensure(4)
    this.view.setUint32(this.pos, n >>> 0, true)
    this.pos += 4
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

  /** Length-delimited bytes from their hex form (ids of remote spans and links). */
  hexBytes(hex: string) {
    const n = (hex.length >>> 1) & 0x7f
    this.ensure(n + 1)
    // a malformed id (from a remote parent or a link) writes fewer bytes: the length says how many
    const written = this.buf.write(hex, this.pos + 1, n, "hex")
    this.buf[this.pos] = written
    this.pos += 1 + written
  }

  /** Length-delimited bytes from 32-bit words, each big-endian: 8 bytes from two (a span id), 16 from four. */
  words(w0: number, w1: number, w2?: number, w3?: number) {
    const long = w2 !== undefined
    this.ensure(17)
    const buf = this.buf
    let pos = this.pos
    buf[pos++] = long ? 16 : 8
    pos = word(buf, pos, w0)
    pos = word(buf, pos, w1)
    if (long) {
      pos = word(buf, pos, w2)
      pos = word(buf, pos, w3!)
    }
    this.pos = pos
  }

  /** Starts a nested message: returns where its length goes, for `end` (with the same `reserve`). */
  begin(reserve: 1 | 2 = 1): number {
    this.ensure(reserve)
    const at = this.pos
    this.pos += reserve
    return at
  }

  end(at: number, reserved: 1 | 2 = 1) {
    const length = this.pos - at - reserved
    if (reserved === 1 && length < 0x80) {
      this.buf[at] = length
      return
    }
    const size = varintSize(length)
    if (size !== reserved) {
      if (size > reserved) this.ensure(size - reserved)
      this.buf.copyWithin(at + size, at + reserved, this.pos)
      this.pos = at + size + length
    }
    const buf = this.buf
    let pos = at
    let l = length
    for (; l >= 0x80; l = Math.floor(l / 0x80)) buf[pos++] = (l % 0x80) | 0x80
    buf[pos] = l
  }

  raw(bytes: Uint8Array) {
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
  }

  /** Forgets everything written, to write anew in the same buffer (after `headroom` bytes). */
  reuse(headroom = 0): this {
    this.pos = headroom
    return this
  }

  /** Forgets what was written from `at` on. */
  truncate(at: number) {
    this.pos = Math.min(at, this.pos)
  }

  /** Where the next byte goes (the headroom included). */
  get length() {
    return this.pos
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos)
  }

  /** Puts `header` right before `at` (in the headroom) and returns it with everything written after it. */
  writeBefore(at: number, header: Uint8Array): Uint8Array {
    const start = at - header.length
    if (start < 0) throw new RangeError("ProtoWriter: header longer than the headroom")
    this.buf.set(header, start)
    return this.buf.subarray(start, this.pos)
  }
}

const word = (buf: Buffer, pos: number, w: number) => {
  buf[pos] = w >>> 24
  buf[pos + 1] = (w >>> 16) & 0xff
  buf[pos + 2] = (w >>> 8) & 0xff
  buf[pos + 3] = w & 0xff
  return pos + 4
}
