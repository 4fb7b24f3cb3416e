/**
 * Which webhook hosts count as private (refused unless ALLOW_PRIVATE_WEBHOOKS=true): names and
 * IP literals, in every spelling a URL can carry them. Hostnames come from `new URL()` as the
 * webhook executor sees them, plus raw spellings a caller might pass directly.
 */
import { describe, expect, it } from "vitest";
import { checkOutboundUrl, isPrivateHost, parseIpv4, parseIpv6, shownUrl } from "../../src/engine/net.ts";

const hostOf = (url: string) => new URL(url).hostname;

describe("isPrivateHost", () => {
  it.each([
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://127.0.0.1/",
    "http://127.8.9.10:8080/",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://172.31.255.255/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://0.0.0.0/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://198.18.0.1/",
    "http://198.19.255.254/",
    "http://240.0.0.1/",
    "http://250.1.2.3/",
    "http://192.0.0.8/",
    "http://224.0.0.1/",
    "http://239.255.255.250/",
    "http://255.255.255.255/",
    "http://[::ffff:0:127.0.0.1]/",
    "http://[::ffff:0:10.1.2.3]/",
    "http://[::ffff:0:7f00:1]/",
    "http://[ff02::1]/",
  ])("refuses %s", (url) => {
    expect(isPrivateHost(hostOf(url))).toBe(true);
  });

  it.each([
    "https://example.com/",
    "https://hooks.slack.com/services/x",
    "http://8.8.8.8/",
    "http://172.32.0.1/",
    "http://172.15.255.255/",
    "http://192.169.0.1/",
    "http://11.0.0.1/",
    "http://[2606:4700:4700::1111]/",
    "http://[::ffff:8.8.8.8]/",
    "http://198.17.255.255/",
    "http://198.20.0.1/",
    "http://192.0.1.1/",
    "http://223.255.255.255/",
    "https://localhost.example.com/",
    "https://mylocalhost/",
  ])("allows %s", (url) => {
    expect(isPrivateHost(hostOf(url))).toBe(false);
  });

  it.each(["2130706433", "0x7f.0.0.1", "::1", "[::1]", "::ffff:192.168.0.1", "fe80::1%eth0", "LocalHost"])(
    "refuses the raw host spelling %s",
    (host) => {
      expect(isPrivateHost(host)).toBe(true);
    },
  );

  it.each([
    "1.0.0.0",
    "11.0.0.0",
    "100.128.0.0",
    "128.0.0.0",
    "169.255.0.0",
    "172.32.0.0",
    "192.0.1.0",
    "192.169.0.0",
    "198.20.0.0",
  ])("allows %s, the first address after a private range", (host) => {
    expect(isPrivateHost(host)).toBe(false);
  });

  it.each(["1.2.3.4", "2001:db8::1", "example.org", "999.1.1.1"])(
    "allows the raw host spelling %s",
    (host) => {
      expect(isPrivateHost(host)).toBe(false);
    },
  );
});

describe("IPv4 and IPv6 literals the policy reads", () => {
  it.each([
    ["1.2.3.4", 0x01020304],
    ["1.2.3.4.", 0x01020304],
    ["0x7f.1", 0x7f000001],
    ["0X7F.0.0.1", 0x7f000001],
    ["0177.0.0.1", 0x7f000001],
    ["0x", 0],
    ["1.0x", 0x01000000],
    ["127.1", 0x7f000001],
    ["127.65536", 0x7f010000],
    ["10.16777215", 0x0affffff],
    ["4294967295", 0xffffffff],
  ])("reads %s as %s", (host, value) => {
    expect(parseIpv4(host)).toBe(value);
  });

  it.each([
    "1.2.3.4.5",
    "256.1.1.1",
    "1.2.3.256",
    "1.16777216",
    "4294967296",
    "08",
    "0x1g",
    "1.2.3.a",
    "1.2.3.4..",
    // A part that is not all digits of its radix, wherever the stray character is.
    "0xg1",
    "087",
    "078",
    "a1",
    "1a",
  ])("does not read %j as an IPv4 address", (host) => {
    expect(parseIpv4(host)).toBeNull();
  });

  it.each([
    ["::", [0, 0, 0, 0, 0, 0, 0, 0]],
    ["::1", [0, 0, 0, 0, 0, 0, 0, 1]],
    ["1::", [1, 0, 0, 0, 0, 0, 0, 0]],
    ["1:2:3:4:5:6:7:8", [1, 2, 3, 4, 5, 6, 7, 8]],
    ["fe80::1%eth0", [0xfe80, 0, 0, 0, 0, 0, 0, 1]],
    ["::ffff:10.0.0.1", [0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001]],
    ["1:2:3:4:5:6:1.2.3.4", [1, 2, 3, 4, 5, 6, 0x0102, 0x0304]],
    ["::1.2.3.4", [0, 0, 0, 0, 0, 0, 0x0102, 0x0304]],
  ])("reads %s as eight groups", (host, groups) => {
    expect(parseIpv6(host)).toEqual(groups);
  });

  it.each([
    "1.2.3.4",
    "1::2::3",
    "12345::",
    "g::1",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7::8",
    "1:2:3:4:5:6:7",
    "::ffff:1.2.3.256",
    ":::",
    "1:2:3:4:5:6:7:1.2.3.4",
    "1:2:3:4:5:6:7:8::1::2",
  ])("does not read %j as an IPv6 address", (host) => {
    expect(parseIpv6(host)).toBeNull();
  });

  it.each([
    "",
    "[]",
    ".",
    "localhost.localdomain",
    "  LOCALHOST  ",
    "[::]",
    "[fec0::1]",
    "[2002:a00:1::]",
    "[64:ff9b::7f00:1]",
    "[::7f00:1]",
    "100.64.0.1",
    "100.127.255.255",
    "::1",
    "[::1",
    "::1]",
    "[::a00:1]",
    "[1::2::3]",
    // IPv6 syntax that is no address is refused: an embedded IPv4 part with more after it, a lone bracket.
    "[::ffff:8.8.8.8x]",
    "[8.8.8.8",
    "8.8.8.8]",
    "[example.com",
    "xexample.com]",
    "[1:2:3:4:5:6:7:8::1::2]",
  ])("refuses the host %j", (host) => {
    expect(isPrivateHost(host)).toBe(true);
  });

  it.each([
    "100.128.0.1",
    "[2002:808:808::]",
    "[64:ff9b::808:808]",
    "[64:ff9b:1::7f00:1]",
    "[::ffff:0:808:808]",
    "[fe7f::1]",
    "[ff00]",
    "0.foo",
    "localhost.example",
    // A private IPv4 address after a prefix that does not embed it (each prefix group in turn).
    "[1::ffff:a00:1]",
    "[0:1::ffff:a00:1]",
    "[0:0:1::ffff:a00:1]",
    "[0:0:0:1::ffff:a00:1]",
    "[0:0:0:0:1:ffff:a00:1]",
    "[::fffe:a00:1]",
    "[1::ffff:0:a00:1]",
    "[0:1::ffff:0:a00:1]",
    "[0:0:1:0:ffff:0:a00:1]",
    "[0:0:0:1:ffff:0:a00:1]",
    "[::ffff:1:a00:1]",
    "[0:0:0:0:1:0:a00:1]",
    "[65:ff9b::a00:1]",
    "[64:ff9a::a00:1]",
    "[64:ff9b:1::a00:1]",
    "[64:ff9b:0:1::a00:1]",
    "[64:ff9b:0:0:1::a00:1]",
    "[64:ff9b::1:0:a00:1]",
    "[64:ff9b::1:a00:1]",
  ])("allows the host %j", (host) => {
    expect(isPrivateHost(host)).toBe(false);
  });
});

describe("checkOutboundUrl", () => {
  it("answers the URL, or why it is refused", () => {
    expect(checkOutboundUrl("not a url", false)).toEqual({ refused: "invalid" });
    expect(checkOutboundUrl("ftp://example.com/x", false)).toEqual({ refused: "scheme", protocol: "ftp:" });
    expect(checkOutboundUrl("http://10.0.0.1/x", false)).toEqual({ refused: "private", host: "10.0.0.1" });
    expect(checkOutboundUrl("http://10.0.0.1/x", true)).toBeInstanceOf(URL);
    const ok = checkOutboundUrl("https://Example.com:8443/a?b=1#c", false);
    expect(ok).toBeInstanceOf(URL);
    expect((ok as URL).href).toBe("https://example.com:8443/a?b=1#c");
    expect(checkOutboundUrl("http://example.com/", false)).toBeInstanceOf(URL);
  });
});

describe("shownUrl", () => {
  it("shows scheme, host and path, never userinfo, query or fragment; a URL from a secret its origin only", () => {
    const url = new URL("https://user:pw@hooks.example.com:8443/api/1234/TOKEN?wait=true#x");
    expect(shownUrl(url, false)).toBe("https://hooks.example.com:8443/api/1234/TOKEN");
    expect(shownUrl(url, true)).toBe("https://hooks.example.com:8443/…");
  });
});
