/**
 * A local OpenTelemetry collector for the workers tests: a real Node HTTP server on 127.0.0.1
 * that takes OTLP/HTTP JSON on `/v1/traces`, as a tracing backend does, and keeps every span by
 * trace id, so a test can ask what a run exported.
 *
 * Routes:
 *   POST /v1/traces           needs `x-collector-token: TOKEN` (401 otherwise) and
 *                             `content-type: application/json` (415 otherwise); keeps the spans
 *                             (each with its resource's attributes) and the raw body. A trace set
 *                             to fail answers 503 instead, counting the refusal.
 *   POST /fail/:traceId?times=N  the next N requests that carry that trace answer 503
 *   GET  /traces/:traceId     JSON {spans, refused, bodies}: the spans kept, how many requests were
 *                             refused, and each raw body that carried the trace
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { CollectedSpan } from "./otlp-types.ts";
import { readBody } from "./webhook-target.ts";

interface Trace {
  spans: CollectedSpan[];
  refused: number;
  bodies: string[];
}

/** An OTLP AnyValue as plain JSON (ints arrive as strings or numbers). */
export function plain(v: Record<string, unknown>): unknown {
  if ("stringValue" in v) return v.stringValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return v.doubleValue;
  if ("boolValue" in v) return v.boolValue;
  return v;
}

export async function startOtlpCollector(token: string) {
  const traces = new Map<string, Trace>();
  const failing = new Map<string, number>();
  const traceOf = (id: string) => {
    let t = traces.get(id);
    if (!t) {
      t = { spans: [], refused: 0, bodies: [] };
      traces.set(id, t);
    }
    return t;
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const body = await readBody(req);
    if (req.method === "POST" && url.pathname === "/v1/traces") {
      if (req.headers["x-collector-token"] !== token) return json(401, { error: "token" });
      if (!(req.headers["content-type"] ?? "").startsWith("application/json"))
        return json(415, { error: "content-type" });
      const request = JSON.parse(body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: Record<string, unknown> }> };
          scopeSpans: Array<{ spans: Omit<CollectedSpan, "resource">[] }>;
        }>;
      };
      const ids = new Set<string>();
      for (const rs of request.resourceSpans)
        for (const ss of rs.scopeSpans) for (const s of ss.spans) ids.add(s.traceId);
      for (const id of ids) {
        const n = failing.get(id) ?? 0;
        if (n > 0) {
          failing.set(id, n - 1);
          traceOf(id).refused += 1;
          return json(503, { error: "failing" });
        }
      }
      for (const rs of request.resourceSpans) {
        const resource = Object.fromEntries(rs.resource.attributes.map((a) => [a.key, plain(a.value)]));
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) traceOf(s.traceId).spans.push({ ...s, resource });
      }
      for (const id of ids) traceOf(id).bodies.push(body);
      return json(200, {});
    }
    const fail = /^\/fail\/([0-9a-f]{32})$/.exec(url.pathname);
    if (req.method === "POST" && fail) {
      failing.set(fail[1] as string, Number(url.searchParams.get("times") ?? "1"));
      return json(200, {});
    }
    const get = /^\/traces\/([0-9a-f]{32})$/.exec(url.pathname);
    if (req.method === "GET" && get)
      return json(200, traces.get(get[1] as string) ?? { spans: [], refused: 0, bodies: [] });
    json(404, { error: "not found" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
