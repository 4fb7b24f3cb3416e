/**
 * The facts of wrangler.toml a workflow depends on: the cron triggers (`[triggers] crons`) its
 * `schedule` entries need, the Rate Limiting bindings (`[[ratelimits]]`) its `invoke.rate_limit`
 * names, and the queue consumers (`[[queues.consumers]]`) its `invoke.queue` needs. A schedule
 * whose cron is not a trigger would never fire, a queue the Worker does not consume never starts a
 * run, and a missing binding would fail every invoke, so each is a build error that shows the
 * lines to add.
 * The file is read once, lazily (projects without schedules or rate limits never need it), with
 * a maintained TOML parser; wrangler reads the same file.
 */
import { existsSync, readFileSync } from "node:fs";
import { parse, TomlError } from "smol-toml";
import { isObject } from "../common/guards.ts";
import type { DiagnosticSink } from "./diagnostics.ts";

export interface RateLimitBinding {
  limit: number;
  /** Seconds: 10 or 60 (what the Workers Rate Limiting API accepts). */
  periodS: number;
}

export interface WranglerFacts {
  /** Path shown in messages. */
  display: string;
  /** False when the file does not exist (or did not parse: the error was reported). */
  found: boolean;
  crons: string[];
  ratelimits: Map<string, RateLimitBinding>;
  /** `[[queues.consumers]]` by queue name. */
  queueConsumers: Map<string, QueueConsumer>;
}

export interface QueueConsumer {
  /** `dead_letter_queue`: where a message goes after `max_retries` failed deliveries (null: deleted). */
  deadLetterQueue: string | null;
}

/** A reader that parses `abs` at most once, on first use. */
export function wranglerConfigReader(
  abs: string,
  display: string,
  sink: DiagnosticSink,
): () => WranglerFacts {
  let facts: WranglerFacts | null = null;
  return () => {
    facts ??= readWranglerConfig(abs, display, sink);
    return facts;
  };
}

function readWranglerConfig(abs: string, display: string, sink: DiagnosticSink): WranglerFacts {
  const facts: WranglerFacts = {
    display,
    found: false,
    crons: [],
    ratelimits: new Map(),
    queueConsumers: new Map(),
  };
  if (!existsSync(abs)) return facts;
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(abs, "utf8")) as Record<string, unknown>;
  } catch (e) {
    const at = e instanceof TomlError ? { line: e.line, col: e.column } : { line: 1, col: 1 };
    const first = (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "";
    sink.error(display, at, `cannot read wrangler.toml: ${first}`);
    return facts;
  }
  facts.found = true;
  const triggers = doc.triggers;
  if (isObject(triggers) && Array.isArray(triggers.crons)) {
    facts.crons = triggers.crons.filter((c): c is string => typeof c === "string");
  }
  if (Array.isArray(doc.ratelimits)) {
    for (const r of doc.ratelimits) {
      if (!isObject(r) || typeof r.name !== "string") continue;
      const simple = isObject(r.simple) ? r.simple : {};
      facts.ratelimits.set(r.name, {
        limit: typeof simple.limit === "number" ? simple.limit : 0,
        periodS: simple.period === 10 ? 10 : 60,
      });
    }
  }
  const consumers = isObject(doc.queues) ? doc.queues.consumers : undefined;
  if (Array.isArray(consumers)) {
    for (const c of consumers) {
      if (!isObject(c) || typeof c.queue !== "string") continue;
      const dlq = typeof c.dead_letter_queue === "string" ? c.dead_letter_queue : null;
      facts.queueConsumers.set(c.queue, { deadLetterQueue: dlq });
    }
  }
  return facts;
}

/** The `[[queues.consumers]]` block consuming `queue`, for an error message. */
export function queueConsumerBlock(queue: string): string {
  return `[[queues.consumers]]\nqueue = "${queue}"\nmax_batch_size = 100\nmax_retries = 3\ndead_letter_queue = "${queue}-dead"`;
}

/** The `crons = [...]` line with `crons` added, for an error message. */
export function cronsLine(facts: WranglerFacts, crons: string[]): string {
  return `crons = ${JSON.stringify([...facts.crons, ...crons]).replace(/","/g, '", "')}`;
}

/** The `[[ratelimits]]` block declaring `name`, for an error message. */
export function rateLimitBlock(name: string): string {
  return `[[ratelimits]]\nname = "${name}"\nnamespace_id = "1001"\nsimple = { limit = 100, period = 60 }`;
}
