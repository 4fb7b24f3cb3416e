/**
 * Which webhook hosts count as private (refused unless ALLOW_PRIVATE_WEBHOOKS=true): names and
 * IP literals, in every spelling a URL can carry them. Hostnames come from `new URL()` as the
 * webhook executor sees them, plus raw spellings a caller might pass directly.
 */
import { describe, expect, it } from "vitest";
import { isPrivateHost } from "../../src/engine/net.ts";

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

  it.each(["1.2.3.4", "2001:db8::1", "example.org", "999.1.1.1"])(
    "allows the raw host spelling %s",
    (host) => {
      expect(isPrivateHost(host)).toBe(false);
    },
  );
});
