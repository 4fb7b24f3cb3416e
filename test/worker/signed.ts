/**
 * Helpers for signed deliveries: the headers come from the Node signer (test/servers/signer.ts,
 * the senders' own libraries), the delivery goes through the real Worker entry in workerd.
 */
import { env } from "cloudflare:workers";
import { call } from "./harness.ts";

const ENV = env as unknown as Record<string, string>;
export const SECRETS = ENV;
const SIGNER = ENV.SIGNER_URL as string;

export interface SignOptions {
  scheme: string;
  secret?: string;
  body: string;
  timestamp?: number;
  url?: string;
  contentType?: string;
  id?: string;
  hmac?: { header: string; prefix?: string; algorithm?: string; encoding?: "hex" | "base64" };
  otherKey?: boolean;
}

/** The headers the sender would send with `body`. */
export async function sign(o: SignOptions): Promise<Record<string, string>> {
  const res = await fetch(`${SIGNER}/sign`, { method: "POST", body: JSON.stringify({ secret: "", ...o }) });
  if (!res.ok) throw new Error(`signer: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { headers: Record<string, string> }).headers;
}

/** POSTs `body` to `/invoke/<name><query>` with the given headers. */
export function deliver(
  name: string,
  body: string,
  headers: Record<string, string>,
  opts: { contentType?: string; query?: string } = {},
): Promise<Response> {
  return call(`/invoke/${name}${opts.query ?? ""}`, {
    method: "POST",
    headers: { "content-type": opts.contentType ?? "application/json", ...headers },
    body,
  });
}

/** The one 401 body every refused delivery gets: it names nothing that was expected. */
export const UNAUTHORIZED = {
  type: "urn:workflow-edge:problem:unauthorized",
  title: "Unauthorized",
  status: 401,
  detail: "missing or invalid credentials",
  code: "unauthorized",
};

export function hexToBase64(hex: string): string {
  return btoa(String.fromCharCode(...(hex.match(/../g) ?? []).map((h) => Number.parseInt(h, 16))));
}

export function base64ToHex(b64: string): string {
  return [...atob(b64)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
}
