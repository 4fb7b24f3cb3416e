/**
 * The OTLP/HTTP JSON export (src/run/trace/otlp.ts; docs/operations.md, "Traces"): its configuration
 * from the Worker's vars, the body a collector receives (OpenTelemetry's own JSON serializer:
 * hex ids, OTLP's span kinds, nanosecond times, error status), and a real local collector
 * taking it with the configured headers.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import type { Span } from "../../../src/engine/trace.ts";
import { encodeSpans, SERVICE_VERSION, sendSpans, traceExportOf } from "../../../src/run/trace/otlp.ts";

const span: Span = {
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  parentSpanId: "b7ad6b7169203331",
  name: "POST",
  kind: 3,
  startMs: 1764000000123,
  endMs: 1764000000456,
  attributes: { "http.request.method": "POST", "http.response.status_code": 503 },
  error: "503",
  events: [{ name: "wait.timeout", timeMs: 1764000000456 }],
};

describe("the export's configuration", () => {
  it("is off without an endpoint or with one that is not an http(s) URL", () => {
    expect(traceExportOf({})).toBeNull();
    expect(traceExportOf({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBeNull();
    expect(traceExportOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x" })).toBeNull();
    expect(traceExportOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" })).toBeNull();
  });

  it("reads OpenTelemetry's name=value,name=value headers (percent-decoded) and the service name", () => {
    expect(
      traceExportOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://api.honeycomb.io/",
        OTEL_EXPORTER_OTLP_HEADERS: "x-honeycomb-team=abc%3D%3D, Authorization=Basic dXNlcjpwdw==,broken",
        OTEL_SERVICE_NAME: "flows",
      }),
    ).toEqual({
      endpoint: "https://api.honeycomb.io",
      headers: { "x-honeycomb-team": "abc==", authorization: "Basic dXNlcjpwdw==" },
      serviceName: "flows",
    });
    expect(traceExportOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })?.serviceName).toBe(
      "workflow-edge",
    );
  });
});

describe("the body", () => {
  it("names the package's version as service.version", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    expect(SERVICE_VERSION).toBe(pkg.version);
  });

  it("is an ExportTraceServiceRequest in the protobuf JSON mapping", () => {
    const body = JSON.parse(new TextDecoder().decode(encodeSpans([span], "flows")));
    const rs = body.resourceSpans[0];
    const attrs = Object.fromEntries(
      rs.resource.attributes.map((a: { key: string; value: { stringValue: string } }) => [
        a.key,
        a.value.stringValue,
      ]),
    );
    expect(attrs).toMatchObject({ "service.name": "flows", "cloud.provider": "cloudflare" });
    expect(attrs["service.version"]).toMatch(/^\d+\.\d+\.\d+$/);
    const s = rs.scopeSpans[0].spans[0];
    expect(s).toMatchObject({
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      name: "POST",
      kind: 3,
      startTimeUnixNano: "1764000000123000000",
      endTimeUnixNano: "1764000000456000000",
      status: { code: 2, message: "503" },
      events: [{ name: "wait.timeout", timeUnixNano: "1764000000456000000" }],
    });
    expect(s.attributes).toContainEqual({ key: "http.response.status_code", value: { intValue: 503 } });
  });
});

describe("sending", () => {
  it("posts JSON to {endpoint}/v1/traces with the configured headers, and says whether the collector took it", async () => {
    const got: Array<{ url: string; type: string; team: string; body: string }> = [];
    let status = 200;
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        got.push({
          url: req.url ?? "",
          type: String(req.headers["content-type"]),
          team: String(req.headers["x-team"]),
          body,
        });
        res.writeHead(status).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/otlp`;
    const config = { endpoint, headers: { "x-team": "t1" }, serviceName: "flows" };
    try {
      expect(await sendSpans(config, [span])).toBe(true);
      status = 503;
      expect(await sendSpans(config, [span])).toBe(false);
      expect(got.map((g) => [g.url, g.type, g.team])).toEqual([
        ["/otlp/v1/traces", "application/json", "t1"],
        ["/otlp/v1/traces", "application/json", "t1"],
      ]);
      expect(JSON.parse(got[0]?.body ?? "").resourceSpans[0].scopeSpans[0].spans[0].spanId).toBe(span.spanId);
    } finally {
      server.close();
    }
    // Nobody listening: false, never a throw.
    expect(await sendSpans(config, [span])).toBe(false);
  });
});
