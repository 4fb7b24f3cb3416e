/**
 * Secret masking (docs/file-format.md "Env and secrets"): every value the engine records (step
 * outputs, errors, params, logs) passes through a Masker before storage or the envelope, so a
 * secret never leaves the outbound request that needs it. A secret can come back in another
 * shape (a webhook echoing an Authorization header, a Basic credential, a query string), so
 * each one is searched in the forms a service is likely to echo: as is, base64 and base64url
 * (padded, unpadded and embedded at any byte offset, as in `Basic base64(user:secret)`),
 * percent-encoded, and JSON-escaped. A secret that is a URL (a Discord or Slack webhook URL) is
 * also quoted in pieces: a message that drops its query still holds its path, which may be the
 * token itself; such a piece is shown as the URL's origin (`https://discord.com/…`), as
 * `shownUrl` (net.ts) shows it. Pure: no Worker APIs.
 */
import type { Json, JsonObject } from "../bundle.ts";
import { shownUrl } from "./net.ts";
import { setOwn } from "./transform-ops.ts";

export const MASK = "***";

/**
 * Base64 pieces shorter than this are not searched: a few characters of base64 occur by
 * chance in ordinary text, and secrets must be of at least 8 characters anyway.
 */
const MIN_EMBEDDED_LENGTH = 8;

export interface Masker {
  /** A copy of `v` with every secret form replaced by `***` in every string value and object key. */
  maskJson(v: Json): Json;
  maskText(s: string): string;
  /** Every form of every secret it replaces, longest first (the streaming masker holds text back by them). */
  readonly forms?: readonly string[];
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

function toUrlAlphabet(b64: string): string {
  return b64.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * The base64 characters that encode only the secret's own bits when it starts `offset` bytes
 * into a longer byte string: a secret inside `user:secret` or a JSON blob is encoded with
 * neighbours, so its full encoding never appears, but this core does.
 */
function embeddedBase64(secret: Uint8Array, offset: number): string {
  const padded = new Uint8Array(offset + secret.length);
  padded.set(secret, offset);
  const b64 = base64(padded);
  const first = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + secret.length)) / 6);
  return b64.slice(first, end);
}

/** Every form of `secret` worth searching for. */
export function secretForms(secret: string): string[] {
  const bytes = new TextEncoder().encode(secret);
  const b64 = base64(bytes);
  const jsonEscaped = JSON.stringify(secret).slice(1, -1);
  const forms = [
    secret,
    b64,
    // Stryker disable next-line Regex: base64 has `=` only as its trailing padding, so the first run is the last
    b64.replace(/=+$/, ""),
    toUrlAlphabet(b64),
    // Stryker disable next-line Regex: as above
    toUrlAlphabet(b64).replace(/=+$/, ""),
    encodeURIComponent(secret),
    // application/x-www-form-urlencoded (a space is `+`), as in a query string echoed raw.
    new URLSearchParams({ s: secret }).toString().slice(2),
    // A JSON Pointer segment (an invalid_params path naming a property called like the secret).
    secret.replace(/~/g, "~0").replace(/\//g, "~1"),
    jsonEscaped,
    // A JSON document that was itself put into a JSON string (e.g. a text body quoted again).
    JSON.stringify(jsonEscaped).slice(1, -1),
  ];
  for (const offset of [0, 1, 2]) {
    const core = embeddedBase64(bytes, offset);
    if (core.length >= MIN_EMBEDDED_LENGTH) forms.push(core, toUrlAlphabet(core));
  }
  return forms;
}

/**
 * The pieces of a secret URL a message may quote without its query or fragment (with and without
 * its scheme, as parsed and as written), each with what it is shown as: the URL's origin.
 */
export function secretUrlPieces(secret: string): Array<[piece: string, shown: string]> {
  if (!/^https?:\/\//i.test(secret)) return [];
  let u: URL;
  try {
    u = new URL(secret);
  } catch {
    return [];
  }
  if (u.pathname.length <= 1) return []; // nothing but the origin is left once the query is dropped
  const shown = shownUrl(u, true);
  // Stryker disable next-line Regex: with the s flag `.*` runs to the end either way
  const written = secret.replace(/[?#].*$/s, "");
  const pieces = [`${u.protocol}//${u.host}${u.pathname}`, `${u.host}${u.pathname}`, u.href, written];
  // Stryker disable next-line ConditionalExpression: the secret itself is masked whole anyway (createMasker sets its forms after the pieces)
  const shownPieces = [...new Set(pieces)].filter((p) => p !== secret && p.length >= MIN_EMBEDDED_LENGTH);
  return shownPieces.map((p): [string, string] => [p, shown]);
}

const identity: Masker = { maskJson: (v) => v, maskText: (s) => s, forms: [] };

export function createMasker(secrets: string[]): Masker {
  const given = secrets.filter((s) => s.length > 0);
  const replacements = new Map<string, string>();
  for (const s of given) for (const [piece, shown] of secretUrlPieces(s)) replacements.set(piece, shown);
  // A form of a whole secret is masked, whatever else it is a piece of (every form of a non-empty
  // secret is non-empty).
  for (const form of given.flatMap(secretForms)) replacements.set(form, MASK);
  // Longest first, so a secret that contains another is replaced whole.
  const patterns = [...replacements.keys()].sort((a, b) => b.length - a.length);
  if (patterns.length === 0) return identity;

  const maskText = (s: string): string => {
    let out = s;
    for (const p of patterns) out = out.replaceAll(p, replacements.get(p) as string);
    return out;
  };

  const maskJson = (v: Json): Json => {
    if (typeof v === "string") return maskText(v);
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map(maskJson);
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(v)) setOwn(out, maskText(key), maskJson(value));
    return out;
  };

  return { maskJson, maskText, forms: patterns };
}

/**
 * JSON.parse's message without V8's quote of the text (`Unexpected token 's', "{"a": sk-live-"...
 * is not valid JSON`): a secret cut in that quote would escape masking.
 */
export function jsonErrorMessage(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(
    // Stryker disable next-line Regex: V8's message ends with "is not valid JSON"; `.*` is greedy either way
    /, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s,
    "",
  );
}
