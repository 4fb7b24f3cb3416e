/**
 * The private-address check behind webhook steps (docs/file-format.md "Webhook step"): a workflow
 * must not be able to reach the Worker host's own network by naming `localhost` or a private
 * IP literal. Only names and literals are judged here; DNS is not resolved (in production
 * Cloudflare's network refuses private targets anyway). IPv4 literals are parsed the way
 * WHATWG URL parsing does (decimal, octal and hex parts, 1 to 4 of them), so `2130706433` or
 * `0x7f.1` cannot slip past when a caller passes a host that was not normalised by `new URL`.
 */

/** WHATWG IPv4 parsing: returns the 32-bit address, or null when `host` is not an IPv4 literal. */
export function parseIpv4(host: string): number | null {
  const parts = host.split(".");
  // Stryker disable next-line ConditionalExpression,EqualityOperator: only an empty host is one empty part, and isPrivateHost answers it first
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  // Stryker disable next-line ConditionalExpression: no part is popped from a single one, so there is always one
  if (parts.length === 0 || parts.length > 4) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    let text = part;
    let radix = 10;
    // Stryker disable next-line Regex: a part with `0x` further in fails every radix's digits either way
    const hex = /^0x/i.test(text);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: "0" read as octal is 0 as well
    const octal = text.length > 1 && text.startsWith("0");
    if (hex) {
      text = text.slice(2);
      radix = 16;
    } else if (octal) {
      // Stryker disable next-line MethodExpression: a leading 0 changes no octal number
      text = text.slice(1);
      radix = 8;
    }
    if (text === "") {
      numbers.push(0);
      continue;
    }
    const digits = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
    if (!digits.test(text)) return null;
    numbers.push(Number.parseInt(text, radix));
  }
  const last = numbers.pop() ?? 0;
  if (numbers.some((n) => n > 255) || last >= 256 ** (4 - numbers.length)) return null;
  let address = last;
  numbers.forEach((n, i) => {
    address += n * 256 ** (3 - i);
  });
  return address;
}

function inV4(address: number, base: [number, number, number, number], bits: number): boolean {
  // Stryker disable next-line ArithmeticOperator: every range here starts at a.b.0.0
  const start = ((base[0] << 24) >>> 0) + (base[1] << 16) + (base[2] << 8) + base[3];
  const size = 2 ** (32 - bits);
  return address >= start && address < start + size;
}

/** Every IPv4 range that is not a public unicast address on the internet (RFC 6890's special-purpose registry). */
function isPrivateV4(address: number): boolean {
  return (
    inV4(address, [0, 0, 0, 0], 8) || // "this network", includes 0.0.0.0
    inV4(address, [10, 0, 0, 0], 8) ||
    inV4(address, [100, 64, 0, 0], 10) || // carrier-grade NAT, shared address space
    inV4(address, [127, 0, 0, 0], 8) ||
    inV4(address, [169, 254, 0, 0], 16) ||
    inV4(address, [172, 16, 0, 0], 12) ||
    inV4(address, [192, 0, 0, 0], 24) || // IETF protocol assignments
    inV4(address, [192, 168, 0, 0], 16) ||
    inV4(address, [198, 18, 0, 0], 15) || // benchmarking
    inV4(address, [224, 0, 0, 0], 4) || // multicast
    inV4(address, [240, 0, 0, 0], 4) // reserved, and 255.255.255.255 (broadcast)
  );
}

/** Parses an IPv6 literal (no brackets, optional zone) into 8 groups, or null. */
export function parseIpv6(host: string): number[] | null {
  // Stryker disable next-line Regex: a host has no line break, so `.*` runs to its end either way
  let text = host.replace(/%.*$/, "");
  // Stryker disable next-line ConditionalExpression,StringLiteral: eight groups cannot be read without a colon anyway
  if (!text.includes(":")) return null;
  const groups: number[] = [];
  // A trailing dotted IPv4 part stands for the last two groups.
  // (A leading `.*` matches from the start with or without `^`.)
  const v4 = /(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let tail: number[] = [];
  // Stryker disable next-line ConditionalExpression: the second group is there whenever the first is
  if (v4?.[1] !== undefined && v4[2] !== undefined) {
    const parts = v4[2].split(".").map(Number);
    if (parts.some((p) => p > 255)) return null;
    const [a = 0, b = 0, c = 0, d = 0] = parts;
    tail = [(a << 8) + b, (c << 8) + d];
    text = v4[1].endsWith("::") ? v4[1] : v4[1].slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const parse = (s: string | undefined): number[] | null => {
    if (!s) return [];
    const out: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const head = parse(halves[0]);
  const rest = parse(halves[1]);
  if (!head || !rest) return null;
  if (halves.length === 2) {
    const fill = 8 - head.length - rest.length - tail.length;
    if (fill < 1) return null;
    groups.push(...head, ...new Array<number>(fill).fill(0), ...rest, ...tail);
  } else {
    groups.push(...head, ...tail);
  }
  return groups.length === 8 ? groups : null;
}

function isPrivateV6(g: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const embeddedV4 = ((g6 << 16) >>> 0) + g7;
  const firstFiveZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  // Mapped and compatible (`::` and `::1` among them: 0.0.0.0 and 0.0.0.1 are "this network").
  if (firstFiveZero && (g5 === 0xffff || g5 === 0)) return isPrivateV4(embeddedV4);
  const firstFourZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0;
  if (firstFourZero && g4 === 0xffff && g5 === 0) return isPrivateV4(embeddedV4); // translated ::ffff:0:0/96
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return isPrivateV4(embeddedV4); // NAT64
  }
  if (g0 === 0x2002) return isPrivateV4(((g1 << 16) >>> 0) + g2); // 6to4
  if ((g0 & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return true; // old site-local fec0::/10
  if ((g0 & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g0 & 0xff00) === 0xff00) return true; // multicast ff00::/8
  return false;
}

/**
 * True for `localhost` (and `*.localhost`), loopback, private, link-local, unique-local and
 * unspecified addresses, IPv4-mapped IPv6 forms of those, and IPv4 written in decimal/hex/octal.
 * Accepts a URL's `hostname` as is (IPv6 in brackets, trailing dot, any case).
 */
export function isPrivateHost(hostname: string): boolean {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (host.endsWith(".")) host = host.slice(0, -1);
  // Stryker disable next-line ConditionalExpression,StringLiteral: an empty host also reads as the IPv4 address 0 below, private too
  if (host === "") return true;
  if (host === "localhost" || host.endsWith(".localhost") || host === "localhost.localdomain") return true;
  const v6 = parseIpv6(host);
  if (v6) return isPrivateV6(v6);
  // IPv6 syntax that is not an IPv6 address is nothing a request should go to: refused (fail closed).
  if (/[:[\]]/.test(host)) return true;
  const v4 = parseIpv4(host);
  if (v4 !== null) return isPrivateV4(v4);
  return false;
}

/**
 * What a message, an event, a log line or a span may show of an outbound URL
 * (docs/file-format.md, "Webhook step"): `scheme://host/path`, never its userinfo, query or
 * fragment, which often carry tokens. A URL built from a secret shows its origin only
 * (`https://discord.com/…`): its path may be the token itself (Discord's and Slack's webhook URLs
 * are), and a piece of a secret is not masked the way the whole one is.
 */
export function shownUrl(url: URL, fromSecret: boolean): string {
  return `${url.protocol}//${url.host}${fromSecret ? "/…" : url.pathname}`;
}

/** Why an outbound URL is refused (each caller words it for its own step or server). */
export type UrlRefusal =
  | { refused: "invalid" }
  | { refused: "scheme"; protocol: string }
  | { refused: "private"; host: string };

/**
 * The outbound URL policy of every request a run makes (webhook steps, tool servers,
 * notifications): an absolute http(s) URL, to a public host unless private hosts are allowed
 * (ALLOW_PRIVATE_WEBHOOKS=true, for local development).
 */
export function checkOutboundUrl(raw: string, allowPrivate: boolean): URL | UrlRefusal {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { refused: "invalid" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return { refused: "scheme", protocol: url.protocol };
  if (isPrivateHost(url.hostname) && !allowPrivate) return { refused: "private", host: url.hostname };
  return url;
}
