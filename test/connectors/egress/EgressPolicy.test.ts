import { describe, expect, it } from "vitest"
import { blockedReason, defaultPolicy, parseEgressAllow } from "../../../src/connectors/egress/EgressPolicy.js"

// Pure classification only: nothing here opens a connection, so public addresses are safe to list.
describe("blockedReason", () => {
  it.each([
    // IPv4
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.5.4", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.1.1", "link-local"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.2.10", "reserved"],
    ["198.18.0.1", "reserved"],
    ["203.0.113.7", "reserved"],
    // cloud metadata wins over the generic range name
    ["169.254.169.254", "cloud metadata"],
    ["169.254.170.2", "cloud metadata"],
    ["100.100.100.200", "cloud metadata"],
    ["fd00:ec2::254", "cloud metadata"],
    ["fd00:ec2:0:0:0:0:0:254", "cloud metadata"],
    ["::ffff:169.254.169.254", "cloud metadata"],
    // IPv6
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf::1", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["fec0::1", "site-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "reserved"],
    ["100::1", "reserved"],
    ["::7f00:1", "reserved"], // deprecated IPv4-compatible form of 127.0.0.1
    ["2001::1", "Teredo tunnel"],
    // IPv4 embedded in IPv6: judged by the IPv4 host they reach
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:0:7f00:1", "loopback"], // RFC 6145 IPv4-translated
    ["64:ff9b::127.0.0.1", "loopback"], // NAT64 well-known prefix
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::1", "local-use NAT64"],
    ["2002:7f00:1::1", "loopback"], // 6to4 of 127.0.0.1
    ["2002:a9fe:a9fe::1", "cloud metadata"], // 6to4 of 169.254.169.254
    // numeric forms the resolver might echo back
    ["2130706433", "loopback"],
    ["0x7f.1", "loopback"],
    // anything unparseable is refused, not guessed at
    ["localhost", "not an IP address"],
    ["", "not an IP address"]
  ])("%s is blocked as %s", (ip, reason) => {
    expect(blockedReason(ip)).toBe(reason)
  })

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1", // just past 172.16/12
    "100.128.0.1", // just past 100.64/10
    "192.175.48.1", // AS112 anycast is globally routed
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1"
  ])("%s is public", (ip) => {
    expect(blockedReason(ip)).toBeUndefined()
  })
})

describe("parseEgressAllow", () => {
  it("treats an empty setting as the default policy", () => {
    for (const policy of [defaultPolicy, parseEgressAllow(""), parseEgressAllow(" , ,")]) {
      expect(policy.isAllowedHost("localhost")).toBe(false)
      expect(policy.isAllowedAddress("127.0.0.1")).toBe(false)
      expect(policy.describe()).toContain("public addresses only")
    }
  })

  it("allows exact hostnames, case- and trailing-dot-insensitively", () => {
    const policy = parseEgressAllow("internal.example.com, LocalHost")
    expect(policy.isAllowedHost("internal.example.com")).toBe(true)
    expect(policy.isAllowedHost("INTERNAL.example.com.")).toBe(true)
    expect(policy.isAllowedHost("localhost")).toBe(true)
    expect(policy.isAllowedHost("api.internal.example.com")).toBe(false)
    expect(policy.isAllowedHost("example.com")).toBe(false)
    expect(policy.isAllowedAddress("127.0.0.1")).toBe(false)
  })

  it("allows every subdomain of a wildcard, but not the apex or look-alikes", () => {
    const policy = parseEgressAllow("*.corp.example")
    expect(policy.isAllowedHost("api.corp.example")).toBe(true)
    expect(policy.isAllowedHost("a.b.corp.example")).toBe(true)
    expect(policy.isAllowedHost("corp.example")).toBe(false)
    expect(policy.isAllowedHost("evilcorp.example")).toBe(false)
    expect(policy.isAllowedHost("corp.example.evil.com")).toBe(false)
  })

  it("stores IDN entries in the punycode form URLs carry", () => {
    expect(parseEgressAllow("bücher.example").isAllowedHost("xn--bcher-kva.example")).toBe(true)
  })

  it("allows IPv4 and IPv6 CIDRs and single addresses", () => {
    const policy = parseEgressAllow("10.0.0.0/8, 127.0.0.1, fd12::/16, [::1], 192.168.1.0/24")
    expect(policy.isAllowedAddress("10.200.3.4")).toBe(true)
    expect(policy.isAllowedAddress("11.0.0.1")).toBe(false)
    expect(policy.isAllowedAddress("127.0.0.1")).toBe(true)
    expect(policy.isAllowedAddress("127.0.0.2")).toBe(false)
    expect(policy.isAllowedAddress("fd12:abcd::1")).toBe(true)
    expect(policy.isAllowedAddress("fd13::1")).toBe(false)
    expect(policy.isAllowedAddress("::1")).toBe(true)
    expect(policy.isAllowedAddress("192.168.1.77")).toBe(true)
    expect(policy.isAllowedAddress("192.168.2.1")).toBe(false)
    // the mapped form reaches the same IPv4 host, so the IPv4 entry covers it
    expect(policy.isAllowedAddress("::ffff:10.1.1.1")).toBe(true)
    expect(policy.isAllowedAddress("not-an-ip")).toBe(false)
    // addresses never satisfy host checks and vice versa
    expect(policy.isAllowedHost("127.0.0.1")).toBe(false)
    expect(policy.describe()).toContain("10.0.0.0/8")
  })

  it("accepts IPv4-mapped CIDRs as their IPv4 equivalent", () => {
    const policy = parseEgressAllow("::ffff:192.168.0.0/112")
    expect(policy.isAllowedAddress("192.168.44.1")).toBe(true)
    expect(policy.isAllowedAddress("192.169.0.1")).toBe(false)
  })

  it("opens metadata addresses only to an entry naming exactly them", () => {
    const broad = parseEgressAllow("100.64.0.0/10, 169.254.0.0/16, fd00::/8")
    expect(broad.isAllowedAddress("100.100.100.100")).toBe(true)
    expect(broad.isAllowedAddress("169.254.1.1")).toBe(true)
    expect(broad.isAllowedAddress("100.100.100.200")).toBe(false)
    expect(broad.isAllowedAddress("169.254.169.254")).toBe(false)
    expect(broad.isAllowedAddress("fd00:ec2::254")).toBe(false)
    const exact = parseEgressAllow("169.254.169.254,fd00:ec2::254/128")
    expect(exact.isAllowedAddress("169.254.169.254")).toBe(true)
    expect(exact.isAllowedAddress("fd00:ec2::254")).toBe(true)
  })

  it.each([
    ["10.0.0.0/33", "prefix length"],
    ["::/129", "prefix length"],
    ["10.0.0.0/abc", "prefix length"],
    ["10.0.0.0/", "prefix length"],
    ["10.1/8", "dotted quad"],
    ["010.0.0.1", "dotted quad"],
    ["2130706433", "dotted quad"],
    ["0x7f.1", "numeric host forms"],
    ["300.1.2.3", "dotted quad"],
    ["fe80:::1", "not a valid IP"],
    ["host:8080", "no ports or schemes"],
    ["http://internal.example.com", "no ports or schemes"],
    ["under score..example", "not a valid hostname"],
    ["-leading.example", "not a valid hostname"],
    ["*.", "not a valid hostname"],
    ["*", "not a valid hostname"],
    ["a.*.example", "not a valid hostname"]
  ])("rejects %j naming the entry", (entry, why) => {
    expect(() => parseEgressAllow(`localhost, ${entry}, 10.0.0.0/8`)).toThrow(why)
    expect(() => parseEgressAllow(entry)).toThrow(`"${entry}"`)
  })
})
