/**
 * OTLP/HTTP JSON: the one module that sends a run's spans to `{OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`
 * as an `ExportTraceServiceRequest` in the protobuf JSON mapping (`resourceSpans` → `scopeSpans`
 * → `spans`, hex ids, integer enums, nanosecond times), encoded by OpenTelemetry's own JSON
 * serializer (`@opentelemetry/otlp-transformer`: 3.6 KiB gzipped in the Worker; docs/decisions.md).
 */
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { withTimeout } from "../../common/timeout.ts";
import type { Span } from "../../engine/trace.ts";

/** Where and how a Worker exports its runs' spans (null: it does not). */
export interface TraceExport {
  endpoint: string;
  headers: Record<string, string>;
  serviceName: string;
}

/** The package version, sent as `service.version` (kept in step with package.json by a test). */
export const SERVICE_VERSION = "0.1.0";
const SCOPE = { name: "workflow-edge", version: SERVICE_VERSION };
/** One export request gives up after this long (the run never waits for it). */
const EXPORT_TIMEOUT_MS = 10_000;

/**
 * The export configured by the Worker's vars: `OTEL_EXPORTER_OTLP_ENDPOINT` (an http(s) URL),
 * `OTEL_EXPORTER_OTLP_HEADERS` (a secret, `name=value,name=value`, values percent-decoded),
 * `OTEL_SERVICE_NAME`. Null without an endpoint, or with one that is not a URL.
 */
export function traceExportOf(env: Record<string, unknown>): TraceExport | null {
  const raw = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (typeof raw !== "string" || raw.trim() === "") return null;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  const headers: Record<string, string> = {};
  const list = env.OTEL_EXPORTER_OTLP_HEADERS;
  if (typeof list === "string")
    for (const pair of list.split(",")) {
      const at = pair.indexOf("=");
      if (at <= 0) continue;
      const name = pair.slice(0, at).trim().toLowerCase();
      let value = pair.slice(at + 1).trim();
      try {
        value = decodeURIComponent(value);
      } catch {
        // Not percent-encoded: taken as written.
      }
      if (name !== "") headers[name] = value;
    }
  const service = env.OTEL_SERVICE_NAME;
  return {
    endpoint: url.href.replace(/\/+$/, ""),
    headers,
    serviceName: typeof service === "string" && service.trim() !== "" ? service.trim() : "workflow-edge",
  };
}

/** The SDK's ReadableSpan, as its serializer takes it. */
type ReadableSpan = Parameters<typeof JsonTraceSerializer.serializeRequest>[0][number];

/** The resource of a service's spans, made once per service name. */
const resources = new Map<string, Resource>();

function resourceOf(serviceName: string): Resource {
  let r = resources.get(serviceName);
  if (!r) {
    r = resourceFromAttributes({
      "service.name": serviceName,
      "service.version": SERVICE_VERSION,
      "cloud.provider": "cloudflare",
    });
    resources.set(serviceName, r);
  }
  return r;
}

/** Epoch ms as OpenTelemetry's HrTime ([seconds, nanoseconds]). */
function hrTime(ms: number): [number, number] {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

/** SpanStatusCode of the API: 0 unset, 2 error. */
const STATUS_ERROR = 2;

/** One of our spans as the SDK's ReadableSpan (the API's span kinds count from 0, OTLP's from 1). */
function readable(s: Span, resource: Resource): ReadableSpan {
  const context = (spanId: string) => ({ traceId: s.traceId, spanId, traceFlags: 1 });
  const end = Math.max(s.endMs, s.startMs);
  return {
    name: s.name,
    kind: s.kind - 1,
    spanContext: () => context(s.spanId),
    parentSpanContext: s.parentSpanId ? context(s.parentSpanId) : undefined,
    startTime: hrTime(s.startMs),
    endTime: hrTime(end),
    duration: hrTime(end - s.startMs),
    status: s.error === undefined ? { code: 0 } : { code: STATUS_ERROR, message: s.error },
    attributes: s.attributes,
    links: [],
    events: (s.events ?? []).map((e) => ({ name: e.name, time: hrTime(e.timeMs) })),
    ended: true,
    resource,
    instrumentationScope: SCOPE,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

/** The request body for `spans`: OpenTelemetry's own JSON serializer (docs/decisions.md). */
export function encodeSpans(spans: readonly Span[], serviceName: string): Uint8Array {
  const resource = resourceOf(serviceName);
  return JsonTraceSerializer.serializeRequest(spans.map((s) => readable(s, resource))) as Uint8Array;
}

/** Sends one batch; true when the collector took it (2xx). Never throws. */
export async function sendSpans(
  config: TraceExport,
  spans: readonly Span[],
  fetcher: typeof fetch = fetch,
): Promise<boolean> {
  try {
    return await withTimeout(EXPORT_TIMEOUT_MS, async (signal) => {
      const res = await fetcher(`${config.endpoint}/v1/traces`, {
        method: "POST",
        headers: { ...config.headers, "content-type": "application/json" },
        body: encodeSpans(spans, config.serviceName) as Uint8Array<ArrayBuffer>,
        signal,
      });
      await res.arrayBuffer().catch(() => null);
      return res.ok;
    });
  } catch {
    return false;
  }
}
