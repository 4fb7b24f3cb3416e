/**
 * A programmable webhook receiver for the workers tests: a real Node HTTP server on
 * 127.0.0.1 with a free port, so webhook steps are tested against real sockets, status codes,
 * timeouts and resets rather than a mocked fetch. Every request (except /log) is recorded
 * under its `key` query parameter (or `x-test-key` header, else ""), so a test can ask what
 * was sent, how often and when.
 *
 * Routes:
 *   /echo                     200 JSON {method, path, query, headers, body, text}: body is the
 *                             parsed JSON request body, or its text, or null when empty
 *   /status/503,503,200?key=K answers the listed statuses in turn, per key and path (the last one
 *                             repeats), JSON {status, attempt} (no body for 204 and 304)
 *   /slow/:ms                 waits ms, then 200 JSON {slept: ms}
 *   /hold/:ms?status=N        waits ms, then answers N (default 200) JSON {held: ms}, counting
 *                             per key how many /hold requests are in flight at once
 *   /stats?key=K              JSON {max_in_flight}: the most /hold requests of K in flight at once
 *   /hang                     never answers (the socket stays open until the client gives up)
 *   /reset                    destroys the socket without answering
 *   /garbage                  200, content-type application/json, a body that is not JSON
 *   /deep/:levels             200 JSON: arrays nested that many levels deep
 *   /huge/:bytes              200 text/plain body of exactly that many bytes
 *   /retry-after/:s?key=K     first request per key: 429 with `Retry-After: s`; later: 200
 *   /redirect?…               302 to /echo with the same query (never followed by webhook steps)
 *   /verify-signature?whsec=S checks the Standard Webhooks headers (webhook-id, -timestamp,
 *                             -signature) against secret S: 200 {verified: true} or 401
 *                             {verified: false, reason}
 *   /log?key=K                JSON array of the requests recorded for K:
 *                             {method, path, url, query, headers, body, time}
 *   anything else             404
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface LoggedRequest {
  method: string;
  /** Path without the query. */
  path: string;
  /** Path with the query, as sent. */
  url: string;
  query: Record<string, string>;
  /** Lower-cased names (idempotency-key, webhook-id, ...). */
  headers: Record<string, string>;
  /** The raw request body. */
  body: string;
  /** Epoch ms when the request arrived. */
  time: number;
}

/** Standard Webhooks: a signature older or newer than this is rejected. */
const TIMESTAMP_TOLERANCE_S = 5 * 60;
/** Requests kept per key, so a runaway test cannot exhaust memory. */
const MAX_LOG_PER_KEY = 1_000;

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** The reference verification of the Standard Webhooks spec (standard-webhooks/libraries). */
export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string>,
  body: string,
  nowS = Math.floor(Date.now() / 1000),
): { ok: true } | { ok: false; reason: string } {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures) return { ok: false, reason: "missing headers" };
  const ts = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(nowS - ts) > TIMESTAMP_TOLERANCE_S) {
    return { ok: false, reason: "timestamp out of tolerance" };
  }
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  for (const versioned of signatures.split(" ")) {
    const [version, signature] = versioned.split(",", 2);
    if (version !== "v1" || signature === undefined) continue;
    const given = Buffer.from(signature, "base64");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true };
  }
  return { ok: false, reason: "no matching signature" };
}

export async function startWebhookTarget(): Promise<{ port: number; close(): Promise<void> }> {
  const log = new Map<string, LoggedRequest[]>();
  /** Requests seen per `${key} ${path}`, for the sequence routes. */
  const counters = new Map<string, number>();
  const timers = new Set<ReturnType<typeof setTimeout>>();

  /** In-flight /hold requests per key, and the most seen at once. */
  const holding = new Map<string, { now: number; max: number }>();

  const countOf = (key: string, path: string): number => {
    const n = (counters.get(`${key} ${path}`) ?? 0) + 1;
    counters.set(`${key} ${path}`, n);
    return n;
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const query = Object.fromEntries(url.searchParams);
    const headers = flatHeaders(req);
    const body = await readBody(req).catch(() => "");
    const key = query.key ?? headers["x-test-key"] ?? "";
    const segments = url.pathname.split("/").filter(Boolean);
    const [route = "", arg = ""] = segments;

    if (route === "log") {
      sendJson(res, 200, log.get(query.key ?? "") ?? []);
      return;
    }
    if (route === "stats") {
      sendJson(res, 200, { max_in_flight: holding.get(query.key ?? "")?.max ?? 0 });
      return;
    }
    const entries = log.get(key) ?? [];
    if (entries.length < MAX_LOG_PER_KEY) {
      entries.push({
        method: req.method ?? "",
        path: url.pathname,
        url: req.url ?? "",
        query,
        headers,
        body,
        time: Date.now(),
      });
    }
    log.set(key, entries);

    switch (route) {
      case "echo": {
        let parsed: unknown = body === "" ? null : body;
        try {
          if (body !== "") parsed = JSON.parse(body);
        } catch {
          // not JSON: echo the text
        }
        sendJson(res, 200, {
          method: req.method,
          path: url.pathname,
          query,
          headers,
          body: parsed,
          text: body,
        });
        return;
      }
      case "status": {
        const codes = arg.split(",").map(Number);
        const attempt = countOf(key, url.pathname);
        const status = codes[Math.min(attempt, codes.length) - 1] ?? 200;
        if (status === 204 || status === 304) {
          res.writeHead(status);
          res.end();
        } else {
          sendJson(res, status, { status, attempt });
        }
        return;
      }
      case "slow": {
        const ms = Number(arg) || 0;
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) sendJson(res, 200, { slept: ms });
        }, ms);
        timers.add(timer);
        res.on("close", () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
        return;
      }
      case "hold": {
        const ms = Number(arg) || 0;
        const status = Number(query.status) || 200;
        const h = holding.get(key) ?? { now: 0, max: 0 };
        holding.set(key, h);
        h.now++;
        h.max = Math.max(h.max, h.now);
        let open = true;
        const done = () => {
          if (!open) return;
          open = false;
          h.now--;
        };
        const timer = setTimeout(() => {
          timers.delete(timer);
          done();
          if (!res.destroyed) sendJson(res, status, { held: ms });
        }, ms);
        timers.add(timer);
        res.on("close", () => {
          clearTimeout(timer);
          timers.delete(timer);
          done();
        });
        return;
      }
      case "hang":
        return;
      case "reset":
        req.socket.destroy();
        return;
      case "garbage":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"this is": not json');
        return;
      case "deep": {
        const levels = Number(arg) || 0;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(`${"[".repeat(levels)}${"]".repeat(levels)}`);
        return;
      }
      case "huge": {
        const total = Number(arg) || 0;
        res.writeHead(200, { "content-type": "text/plain", "content-length": total });
        const chunk = Buffer.alloc(64 * 1024, "a");
        let sent = 0;
        const pump = () => {
          while (sent < total) {
            const n = Math.min(chunk.length, total - sent);
            sent += n;
            if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
              res.once("drain", pump);
              return;
            }
          }
          res.end();
        };
        pump();
        return;
      }
      case "retry-after": {
        const attempt = countOf(key, url.pathname);
        if (attempt === 1) sendJson(res, 429, { attempt }, { "retry-after": arg });
        else sendJson(res, 200, { attempt });
        return;
      }
      case "redirect":
        res.writeHead(302, { location: `/echo${url.search}`, "content-type": "text/plain" });
        res.end("see /echo");
        return;
      case "verify-signature": {
        const verdict = verifyStandardWebhook(query.whsec ?? "", headers, body);
        if (verdict.ok) sendJson(res, 200, { verified: true });
        else sendJson(res, 401, { verified: false, reason: verdict.reason });
        return;
      }
      default:
        sendJson(res, 404, { error: "no such route", path: url.pathname });
    }
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
