/** A span as the local OTLP collector (otlp-collector.ts) keeps it; no Node types, so workerd tests read it too. */
export interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  events?: Array<{ name: string; timeUnixNano: string }>;
  status?: { code?: number; message?: string };
  /** The resource's attributes, flattened. */
  resource: Record<string, unknown>;
}
