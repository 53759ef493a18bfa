/**
 * Which network destinations outgoing connector calls may reach (SSRF defence).
 *
 * Pure logic, no I/O: `blockedReason` classifies one IP address, `parseEgressAllow` turns the
 * `SWITCHYARD_EGRESS_ALLOW` setting into an `EgressPolicy`. The enforcement at connect time lives in
 * `GuardedDispatcher.ts`, which asks both for every new connection.
 */
import ipaddr from "ipaddr.js"
import * as Net from "node:net"
import { domainToASCII } from "node:url"

export interface EgressPolicy {
  /** True when the hostname (as given in the URL) is allowlisted; such a host may resolve to anything. */
  readonly isAllowedHost: (hostname: string) => boolean
  /** True when the address falls in an allowlisted network. */
  readonly isAllowedAddress: (ip: string) => boolean
  /** One line for logs and error messages. */
  readonly describe: () => string
}

type Address = ipaddr.IPv4 | ipaddr.IPv6
type Network = [Address, number]

// Instance-credential endpoints. Checked before the generic ranges so the reason says what is at stake, and
// kept out of reach of broad allowlist CIDRs (see `isAllowedAddress`): 100.64.0.0/10 is a common entry for
// Tailscale users and would otherwise silently open Alibaba's metadata service.
const METADATA_ADDRESSES = new Set(
  [
    "169.254.169.254", // AWS, GCP (metadata.google.internal), Azure, OCI, DigitalOcean, OpenStack, ...
    "169.254.170.2", // AWS ECS task credentials
    "169.254.170.23", // AWS EKS Pod Identity
    "100.100.100.200", // Alibaba Cloud
    "192.0.0.192", // Oracle Cloud (classic)
    "fd00:ec2::254", // AWS IMDS over IPv6
    "fd00:ec2::23" // AWS EKS Pod Identity over IPv6
  ].map((ip) => ipaddr.parse(ip).toNormalizedString())
)

// a zone (%eth0) only picks an interface; it must not let fd00:ec2::254%eth0 dodge the comparison
const isMetadata = (address: Address) => METADATA_ADDRESSES.has(address.toNormalizedString().replace(/%.*$/, ""))

const V4_REASONS: Record<string, string | undefined> = {
  unicast: undefined,
  // AS112 sinks and AMT relays are ordinary globally routed anycast, nothing internal lives there
  as112: undefined,
  amt: undefined,
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  linkLocal: "link-local",
  loopback: "loopback",
  carrierGradeNat: "carrier-grade NAT",
  private: "private",
  reserved: "reserved"
}

const V6_REASONS: Record<string, string | undefined> = {
  unicast: undefined,
  as112v6: undefined,
  amt: undefined,
  unspecified: "unspecified",
  linkLocal: "link-local",
  multicast: "multicast",
  loopback: "loopback",
  uniqueLocal: "unique-local",
  deprecatedSiteLocal: "site-local",
  // a Teredo address tunnels to an IPv4 host through a relay; no API lives there and the relay path is opaque
  teredo: "Teredo tunnel",
  discard: "reserved",
  benchmarking: "reserved",
  deprecatedOrchid: "reserved",
  orchid2: "reserved",
  droneRemoteIdProtocolEntityTags: "reserved",
  segmentRouting: "reserved",
  reserved: "reserved"
}

const GLOBAL_UNICAST_V6: Network = [ipaddr.IPv6.parse("2000::"), 3]
const NAT64_WELL_KNOWN: Network = [ipaddr.IPv6.parse("64:ff9b::"), 96]

const v4FromParts = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

const reasonV4 = (address: ipaddr.IPv4): string | undefined => {
  if (isMetadata(address)) return "cloud metadata"
  const range = address.range()
  // a range ipaddr.js adds in a later version is special-purpose by definition: fail closed
  return range in V4_REASONS ? V4_REASONS[range] : `special-purpose (${range})`
}

const reasonV6 = (address: ipaddr.IPv6): string | undefined => {
  if (isMetadata(address)) return "cloud metadata"
  const parts = address.parts
  const range = address.range()
  switch (range) {
    // ::ffff:a.b.c.d and ::ffff:0:a.b.c.d reach the embedded IPv4 host, so judge that host
    case "ipv4Mapped":
    case "rfc6145":
      return reasonV4(v4FromParts(parts[6]!, parts[7]!))
    // NAT64 translates 64:ff9b::/96 to the embedded IPv4 address; the local-use 64:ff9b:1::/48 prefix is a
    // site's own translator with operator-chosen layout, so it cannot be decoded and is internal by definition
    case "rfc6052":
      return address.match(NAT64_WELL_KNOWN) ? reasonV4(v4FromParts(parts[6]!, parts[7]!)) : "local-use NAT64"
    // 6to4 (2002:AABB:CCDD::/48) is routed to the IPv4 host AA.BB.CC.DD
    case "6to4":
      return reasonV4(v4FromParts(parts[1]!, parts[2]!))
  }
  if (!(range in V6_REASONS)) return `special-purpose (${range})`
  const reason = V6_REASONS[range]
  // ipaddr.js calls everything it has no name for "unicast", including IPv4-compatible ::a.b.c.d and the
  // rest of ::/8; only 2000::/3 is allocated as global unicast, so anything outside it is not a public API
  if (reason === undefined && !address.match(GLOBAL_UNICAST_V6)) return "reserved"
  return reason
}

const parseAddress = (ip: string): Address | undefined => {
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip
  try {
    return ipaddr.parse(bare)
  } catch {
    return undefined
  }
}

/** Why an address must not be reached by default, or undefined when it is a public address. */
export const blockedReason = (ip: string): string | undefined => {
  const address = parseAddress(ip)
  // callers hand us what the resolver returned; anything unparseable is refused rather than guessed at
  if (address === undefined) return "not an IP address"
  return address.kind() === "ipv4" ? reasonV4(address as ipaddr.IPv4) : reasonV6(address as ipaddr.IPv6)
}

/** An IPv4-mapped IPv6 address is the IPv4 host as far as the kernel is concerned; match it as such. */
const unmap = (address: Address): Address =>
  address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address

const normalizeHostname = (hostname: string) => {
  const lower = hostname.toLowerCase()
  return lower.endsWith(".") ? lower.slice(0, -1) : lower
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/
// WHATWG URL parsing turns a host whose last label is numeric into an IPv4 address ("2130706433", "0x7f.1")
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/i

const bad = (entry: string, why: string) => new Error(`Invalid SWITCHYARD_EGRESS_ALLOW entry "${entry}": ${why}`)

const parseHostname = (entry: string, name: string): string => {
  // IDN entries are matched in the punycode form the URL parser hands to the connector
  const ascii = domainToASCII(name)
  if (ascii === "") throw bad(entry, "not a valid hostname, IP address or CIDR")
  const normalized = normalizeHostname(ascii)
  const labels = normalized.split(".")
  if (normalized.length > 253 || !labels.every((label) => LABEL.test(label))) {
    throw bad(entry, "not a valid hostname, IP address or CIDR (ports and schemes are not allowed)")
  }
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!)) {
    throw bad(entry, "numeric host forms are ambiguous; write IPv4 addresses as dotted quads like 10.0.0.1")
  }
  return normalized
}

const parseIp = (entry: string, text: string): Address => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  // only canonical forms: "10.1" or "010.0.0.1" mean different things to different parsers
  if (bare.includes(":") ? ipaddr.IPv6.isValid(bare) : ipaddr.IPv4.isValidFourPartDecimal(bare)) {
    return ipaddr.parse(bare)
  }
  throw bad(entry, "not a valid IP address or CIDR (IPv4 must be a dotted quad like 10.0.0.1; no ports or schemes)")
}

const parseNetwork = (entry: string): Network => {
  const slash = entry.indexOf("/")
  const address = parseIp(entry, slash === -1 ? entry : entry.slice(0, slash))
  const width = address.kind() === "ipv4" ? 32 : 128
  let prefix = width
  if (slash !== -1) {
    const text = entry.slice(slash + 1)
    prefix = /^\d{1,3}$/.test(text) ? Number(text) : NaN
    if (!(prefix >= 0 && prefix <= width)) throw bad(entry, `prefix length must be 0..${width}`)
  }
  const unmapped = unmap(address)
  return unmapped === address ? [address, prefix] : [unmapped, Math.max(0, prefix - 96)]
}

/**
 * Parses `SWITCHYARD_EGRESS_ALLOW`: comma-separated hostnames (`internal.example.com`), wildcard domains
 * (`*.corp.example`: every subdomain at any depth, not the apex itself), single IPs and CIDRs.
 * Throws an Error naming the first bad entry.
 */
export const parseEgressAllow = (text: string): EgressPolicy => {
  const hosts = new Set<string>()
  const suffixes: Array<string> = []
  const networks: Array<Network> = []
  for (const raw of text.split(",")) {
    const entry = raw.trim()
    if (entry === "") continue // tolerate "a,,b" and trailing commas from templated configs
    if (entry.startsWith("*.")) {
      suffixes.push("." + parseHostname(entry, entry.slice(2)))
    } else if (entry.includes("/") || entry.includes(":") || Net.isIP(entry) !== 0 || /^[\d.]+$/.test(entry)) {
      networks.push(parseNetwork(entry))
    } else {
      hosts.add(parseHostname(entry, entry))
    }
  }

  const isAllowedHost = (hostname: string) => {
    const name = normalizeHostname(hostname)
    return hosts.has(name) || suffixes.some((suffix) => name.endsWith(suffix))
  }

  const isAllowedAddress = (ip: string) => {
    const parsed = parseAddress(ip)
    if (parsed === undefined) return false
    const address = unmap(parsed)
    // metadata endpoints open only to an entry naming exactly them, never as a side effect of a broad CIDR
    const exactOnly = blockedReason(ip) === "cloud metadata"
    return networks.some(([network, prefix]) =>
      network.kind() === address.kind()
      && address.match(network, prefix)
      && (!exactOnly || prefix === (network.kind() === "ipv4" ? 32 : 128))
    )
  }

  const describe = () => {
    const names = [...hosts, ...suffixes.map((suffix) => "*" + suffix)]
    const cidrs = networks.map(([network, prefix]) => `${network.toString()}/${prefix}`)
    if (names.length === 0 && cidrs.length === 0) return "egress: public addresses only (no allowlist)"
    return `egress: public addresses plus allowlisted hosts [${names.join(", ")}] and networks [${cidrs.join(", ")}]`
  }

  return { isAllowedHost, isAllowedAddress, describe }
}

/** No allowlist: only public addresses are reachable. */
export const defaultPolicy: EgressPolicy = parseEgressAllow("")
