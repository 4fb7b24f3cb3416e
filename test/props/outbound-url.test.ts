/**
 * The outbound URL policy (src/engine/net.ts) against the WHATWG URL parser as the oracle: every
 * spelling of an IPv4 address a URL accepts (decimal, octal, hex, 1 to 4 parts, a trailing dot)
 * is read as the address the parser makes of it, every IPv6 spelling (compressed, upper case, an
 * IPv4 tail) as its eight groups; and a host is private exactly when the address falls in a
 * range of docs/operations.md's list, in any of those spellings.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkOutboundUrl, isPrivateHost, parseIpv4, parseIpv6 } from "../../src/engine/net.ts";
import { fcSettings } from "./fc-settings.ts";

/** The ranges docs/operations.md lists, as [first address, prefix length]. */
const PRIVATE_V4: Array<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];

const toNumber = (dotted: string) => dotted.split(".").reduce((n, p) => n * 256 + Number(p), 0);
const privateV4 = (n: number) =>
  PRIVATE_V4.some(
    ([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(toNumber(base) / 2 ** (32 - bits)),
  );

/** What the URL parser makes of a host (null: it refuses it). */
function whatwgHost(host: string): string | null {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
}

/** One address (a 32-bit number) in one of the spellings a URL accepts: `parts` parts, each in a base. */
const v4Spelling = fc
  .record({
    address: fc.oneof(
      fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      fc.constantFrom(...PRIVATE_V4.map(([b]) => toNumber(b))),
      fc.constantFrom(...PRIVATE_V4.map(([b, bits]) => toNumber(b) + 2 ** (32 - bits) - 1)),
    ),
    parts: fc.integer({ min: 1, max: 4 }),
    bases: fc.array(fc.constantFrom(10, 8, 16), { minLength: 4, maxLength: 4 }),
    upper: fc.boolean(),
    trailingDot: fc.boolean(),
  })
  .map(({ address, parts, bases, upper, trailingDot }) => {
    const bytes = [address >>> 24, (address >>> 16) & 255, (address >>> 8) & 255, address & 255];
    const values = [...bytes.slice(0, parts - 1), bytes.slice(parts - 1).reduce((n, b) => n * 256 + b, 0)];
    const written = values.map((v, i) => {
      const base = bases[i] as number;
      if (base === 16) return `0${upper ? "X" : "x"}${upper ? v.toString(16).toUpperCase() : v.toString(16)}`;
      if (base === 8) return `0${v.toString(8)}`;
      return String(v);
    });
    return { address, host: written.join(".") + (trailingDot ? "." : "") };
  });

const group = fc.integer({ min: 0, max: 0xffff });
/** Eight groups, often with the prefixes the policy looks at. */
const v6Groups = fc.oneof(
  fc.array(group, { minLength: 8, maxLength: 8 }),
  fc
    .tuple(
      fc.constantFrom(0xfe80, 0xfec0, 0xfc00, 0xfd12, 0xff02, 0x2002, 0x2606, 0x64),
      fc.array(group, { minLength: 7, maxLength: 7 }),
    )
    .map(([g0, rest]) => [g0, ...rest]),
  fc
    .tuple(
      fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      fc.constantFrom("mapped", "translated", "compatible", "nat64"),
    )
    .map(([v4, form]) => {
      const tail = [v4 >>> 16, v4 & 0xffff];
      if (form === "mapped") return [0, 0, 0, 0, 0, 0xffff, ...tail];
      if (form === "translated") return [0, 0, 0, 0, 0xffff, 0, ...tail];
      if (form === "nat64") return [0x64, 0xff9b, 0, 0, 0, 0, ...tail];
      return [0, 0, 0, 0, 0, 0, ...tail];
    }),
  fc.constantFrom<number[]>([0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 1]),
);

/** The groups written out: full or with the longest zero run as `::`, any case, sometimes an IPv4 tail. */
function writeV6(g: number[], compress: boolean, upper: boolean, v4Tail: boolean): string {
  const hex = (n: number) => (upper ? n.toString(16).toUpperCase() : n.toString(16));
  const [g6 = 0, g7 = 0] = g.slice(6);
  const words = (v4Tail ? g.slice(0, 6) : g).map(hex);
  const tail = v4Tail ? [`${g6 >>> 8}.${g6 & 255}.${g7 >>> 8}.${g7 & 255}`] : [];
  let at = -1;
  let len = 0;
  for (let i = 0; compress && i < words.length; i++) {
    let j = i;
    while (j < words.length && words[j] === "0") j++;
    if (j - i > len) [at, len] = [i, j - i];
  }
  if (len === 0) return [...words, ...tail].join(":");
  return `${words.slice(0, at).join(":")}::${[...words.slice(at + len), ...tail].join(":")}`;
}

function privateV6(g: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const v4 = g6 * 65536 + g7;
  const zeros = (...xs: number[]) => xs.every((x) => x === 0);
  if (zeros(g0, g1, g2, g3, g4, g5, g6) && (g7 === 0 || g7 === 1)) return true;
  if (zeros(g0, g1, g2, g3, g4) && (g5 === 0xffff || g5 === 0)) return privateV4(v4);
  if (zeros(g0, g1, g2, g3) && g4 === 0xffff && g5 === 0) return privateV4(v4);
  if (g0 === 0x64 && g1 === 0xff9b && zeros(g2, g3, g4, g5)) return privateV4(v4);
  if (g0 === 0x2002) return privateV4(g1 * 65536 + g2);
  return g0 >= 0xfe80 && g0 <= 0xfeff ? true : (g0 & 0xfe00) === 0xfc00 || g0 >= 0xff00;
}

describe("the outbound URL policy against the URL parser", () => {
  it("reads every IPv4 spelling a URL accepts as the address the parser makes of it", () => {
    fc.assert(
      fc.property(v4Spelling, ({ address, host }) => {
        const parsed = whatwgHost(host);
        if (parsed === null) return; // the URL parser refuses it: no URL can carry it
        expect(toNumber(parsed)).toBe(address);
        expect(parseIpv4(host)).toBe(address);
        expect(isPrivateHost(host)).toBe(privateV4(address));
        expect(isPrivateHost(parsed)).toBe(privateV4(address));
      }),
      fcSettings(),
    );
  });

  it("reads every IPv6 spelling as its eight groups, and judges it by the ranges", () => {
    fc.assert(
      fc.property(v6Groups, fc.boolean(), fc.boolean(), fc.boolean(), (g, compress, upper, v4Tail) => {
        const text = writeV6(g, compress, upper, v4Tail);
        expect(parseIpv6(text)).toEqual(g);
        expect(whatwgHost(`[${text}]`)).not.toBeNull();
        expect(isPrivateHost(`[${text}]`)).toBe(privateV6(g));
        expect(isPrivateHost(whatwgHost(`[${text}]`) as string)).toBe(privateV6(g));
      }),
      fcSettings(),
    );
  });

  it("refuses a URL to a private address unless private hosts are allowed, and a scheme other than http(s)", () => {
    fc.assert(
      fc.property(v4Spelling, fc.constantFrom("http", "https", "ftp", "file", "ws"), (a, scheme) => {
        const raw = `${scheme}://${a.host}/hook`;
        if (whatwgHost(a.host) === null) return;
        const refused = checkOutboundUrl(raw, false);
        const allowed = checkOutboundUrl(raw, true);
        if (scheme !== "http" && scheme !== "https") {
          expect(refused).toEqual({ refused: "scheme", protocol: `${scheme}:` });
          expect(allowed).toEqual({ refused: "scheme", protocol: `${scheme}:` });
        } else if (privateV4(a.address)) {
          expect(refused).toMatchObject({ refused: "private" });
          expect(allowed).toBeInstanceOf(URL);
        } else {
          expect(refused).toBeInstanceOf(URL);
          expect((refused as URL).href).toBe(new URL(raw).href);
        }
      }),
      fcSettings(),
    );
  });
});
