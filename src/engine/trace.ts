/**
 * One trace per run (docs/operations.md, "Traces"): the spans a run's steps make as they reach
 * the world, and the W3C `traceparent` every outbound request carries. Executors see only
 * `StepContext.trace` (a `StepTracer`): each outbound request is a client span under the step's
 * span, ended with what came back. Spans of steps and the run itself are built from the run's
 * records by the run layer (src/run/trace/run-trace.ts); their ids follow from the trace id and the
 * step's path, so a span made after an eviction finds its parent without anything stored.
 */

import { shownUrl } from "./net.ts";

/** An attribute value as OTLP carries it (strings, integers, booleans). */
export type SpanValue = string | number | boolean;
export type SpanAttributes = Record<string, SpanValue>;

/** OTLP span kinds (the protobuf enum's numbers). */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

/** One finished span (times in epoch ms; the encoder writes nanoseconds). */
export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: SpanAttributes;
  /** ERROR with a message; absent: unset. */
  error?: string;
  events?: Array<{ name: string; timeMs: number }>;
}

/** The trace a run belongs to: its id and, when an invoke carried a `traceparent`, the caller's span. */
export interface TraceRef {
  id: string;
  parent: string | null;
}

/** A client span under way: its `traceparent` goes on the request; `end` records it. */
export interface ClientSpan {
  readonly traceparent: string;
  end(attributes?: SpanAttributes, error?: string): void;
}

/** What an executor is given to trace its outbound requests. */
export interface StepTracer {
  client(name: string, attributes: SpanAttributes): ClientSpan;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** The trace id and span id of a valid W3C `traceparent` (version 00, ids not all zero); null otherwise. */
export function parseTraceparent(
  header: string | null | undefined,
): { traceId: string; spanId: string } | null {
  const m = header ? TRACEPARENT.exec(header.trim()) : null;
  if (!m) return null;
  const [, traceId = "", spanId = ""] = m;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId };
}

export function traceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const x of b) out += x.toString(16).padStart(2, "0");
  return out;
}

/** A new trace id (32 lower-case hex digits). */
export function newTraceId(): string {
  return randomHex(16);
}

export function newSpanId(): string {
  return randomHex(8);
}

/**
 * The span id of the step at `path` in trace `traceId` ("" is the run's root span): FNV-1a over
 * both, in two 32-bit lanes, so the same step has the same span id in every incarnation of its run.
 */
export function stepSpanId(traceId: string, path: string): string {
  const text = `${traceId}/${path}`;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x01000193) >>> 0;
    b = (b ^ (a >>> 13)) >>> 0;
  }
  const hex = (a.toString(16).padStart(8, "0") + b.toString(16).padStart(8, "0")).slice(0, 16);
  return hex === "0000000000000000" ? "0000000000000001" : hex;
}

/** Where finished spans go (null: the run exports none, only its `traceparent` travels). */
export type SpanSink = ((span: Span) => void) | null;

/**
 * The tracer of one step: client spans under `parentSpanId`, timed on `now`. Without a sink the
 * requests still carry a `traceparent` (a trace may be followed downstream) and nothing is kept.
 */
export function stepTracer(
  trace: TraceRef,
  parentSpanId: string,
  now: () => number,
  sink: SpanSink,
): StepTracer {
  return {
    client(name, attributes) {
      const spanId = newSpanId();
      const startMs = now();
      let ended = false;
      return {
        traceparent: traceparent(trace.id, spanId),
        end(more, error) {
          if (ended || !sink) return;
          ended = true;
          const span: Span = {
            traceId: trace.id,
            spanId,
            parentSpanId,
            name,
            kind: SpanKind.CLIENT,
            startMs,
            endMs: now(),
            attributes: more ? { ...attributes, ...more } : attributes,
          };
          if (error !== undefined) span.error = error;
          sink(span);
        },
      };
    },
  };
}

/**
 * The HTTP attributes of one request attempt (OpenTelemetry's HTTP semantic conventions): the URL
 * as `shownUrl` shows it (no query; the origin alone when it was built from a secret).
 */
export function httpAttributes(
  method: string,
  url: URL,
  attempt: number,
  fromSecret: boolean,
): SpanAttributes {
  const attrs: SpanAttributes = {
    "http.request.method": method,
    "url.full": shownUrl(url, fromSecret),
    "server.address": url.hostname,
  };
  if (attempt > 1) attrs["http.request.resend_count"] = attempt - 1;
  return attrs;
}

/** How an HTTP attempt ended, as attributes: its status code, or the kind of error that stopped it. */
export function httpOutcome(status: number | null, err?: unknown): SpanAttributes {
  if (status !== null) return { "http.response.status_code": status };
  const type = err instanceof Error ? (err.name === "Error" ? "request_failed" : err.name) : "request_failed";
  return { "error.type": type };
}

/** `init` with a `traceparent` header added (a model call's request). */
export function withTraceparent(init: RequestInit | undefined, value: string): RequestInit {
  const headers = new Headers(init?.headers);
  headers.set("traceparent", value);
  return { ...init, headers };
}
