/**
 * Run notifications (docs/file-format.md): after a run ends, each `notify:` entry whose `on` holds its status
 * gets one POST `{type: "run.<status>", run_id, workflow, status, error, created_at,
 * finished_at, rerun_url, view_url}`, masked, with `webhook-id: msg_<run_id>_<type>` on every
 * attempt (and the Standard Webhooks signature when the entry signs), under the URL rules of
 * webhook steps. Up to 3 attempts with back-off, like a webhook step.
 *
 * Durable without a write at the end of the run: what is due follows from the run's final
 * status and its pinned definition; only an entry's outcome (delivered, given up, or the
 * attempts spent) is written, to its own row, after each attempt. The run's object calls
 * `deliver()` after the run's answer has left, and from its alarm until nothing is due (an
 * eviction in between only means the attempt is made again: at least once).
 */
import type { CompiledNotify, CompiledWorkflow, JsonObject } from "../bundle.ts";
import { importSigningKey, standardWebhookHeaders } from "../common/standard-webhooks.ts";
import type { Masker } from "../engine/mask.ts";
import { checkOutboundUrl } from "../engine/net.ts";
import { backoffDelay, isRetryableStatus, parseRetryAfter } from "../engine/retry.ts";
import { declaredEnv } from "../engine/secrets.ts";
import { renderUrl } from "../engine/substitute.ts";
import type { KvPort } from "./kv-port.ts";
import type { RunDoc } from "./run-doc.ts";

export const NOTIFY_ATTEMPTS = 3;
const ATTEMPT_TIMEOUT_MS = 10_000;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;
const ROW = "notify";

/** What became of one entry (by index in `notify:`). */
interface EntryState {
  attempts: number;
  /** Delivered, or given up (a final refusal, or the last attempt failed). */
  done: boolean;
  /** Epoch ms before which the next attempt is not made. */
  next: number;
}

export interface NotifierRun {
  doc: RunDoc;
  workflow: CompiledWorkflow;
  masker: Masker;
}

export interface NotifierDeps {
  kv: KvPort;
  env: () => Record<string, unknown>;
  run: () => NotifierRun | null;
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  allowPrivate: boolean;
  now: () => number;
}

export class RunNotifier {
  private states: Map<number, EntryState> | null = null;
  private inFlight: Promise<void> | null = null;
  private readonly deps: NotifierDeps;

  constructor(deps: NotifierDeps) {
    this.deps = deps;
  }

  /** Entries due for the run's final status (none while it is active). */
  private due(run: NotifierRun): Array<[number, CompiledNotify]> {
    const status = run.doc.status;
    if (status !== "complete" && status !== "failed" && status !== "canceled") return [];
    return (run.workflow.notify ?? []).flatMap((n, i) =>
      n.on.includes(status) ? [[i, n] as [number, CompiledNotify]] : [],
    );
  }

  private load(): Map<number, EntryState> {
    if (!this.states) {
      const text = this.deps.kv.get(ROW);
      const saved = text === undefined ? {} : (JSON.parse(text) as Record<string, EntryState>);
      this.states = new Map(Object.entries(saved).map(([k, v]) => [Number(k), v]));
    }
    return this.states;
  }

  private save(): void {
    this.deps.kv.put(ROW, JSON.stringify(Object.fromEntries(this.load())));
  }

  /** When the next attempt is due (epoch ms), or null when nothing is left to send. */
  nextAttempt(): number | null {
    const run = this.deps.run();
    if (!run) return null;
    const due = this.due(run);
    // A run with nothing to notify reads nothing (the bench profiled that read on every run).
    if (due.length === 0) return null;
    const states = this.load();
    let next: number | null = null;
    for (const [i] of due) {
      const s = states.get(i);
      if (s?.done) continue;
      const at = s?.next ?? 0;
      next = next === null ? at : Math.min(next, at);
    }
    return next;
  }

  /** Makes every attempt that is due now (one per entry); one pass at a time. */
  deliver(): Promise<void> {
    if (!this.inFlight) {
      this.inFlight = this.pass().finally(() => {
        this.inFlight = null;
      });
    }
    return this.inFlight;
  }

  /** After the run's storage was cleared: nothing is remembered. */
  reset(): void {
    this.states = null;
  }

  private async pass(): Promise<void> {
    const run = this.deps.run();
    if (!run) return;
    const due = this.due(run);
    if (due.length === 0) return;
    const states = this.load();
    const now = this.deps.now();
    const work = due.filter(([i]) => {
      const s = states.get(i);
      return !s?.done && (s?.next ?? 0) <= now;
    });
    if (work.length === 0) return;
    const outcomes = await Promise.all(work.map(([, n]) => this.attempt(run, n)));
    work.forEach(([i], k) => {
      const outcome = outcomes[k] ?? { ok: false, retry: false, afterMs: null };
      const attempts = (states.get(i)?.attempts ?? 0) + 1;
      const done = outcome.ok || !outcome.retry || attempts >= NOTIFY_ATTEMPTS;
      const wait = outcome.afterMs ?? backoffDelay(attempts, BACKOFF_BASE_MS, BACKOFF_MAX_MS);
      states.set(i, { attempts, done, next: this.deps.now() + Math.min(BACKOFF_MAX_MS, wait) });
    });
    // A deleted run (or one deleted and created anew) is not this one.
    if (this.deps.run()?.doc === run.doc) this.save();
  }

  /** One POST; `retry`: worth trying again (network error, timeout, 408, 429, 5xx). */
  private async attempt(
    run: NotifierRun,
    n: CompiledNotify,
  ): Promise<{ ok: boolean; retry: boolean; afterMs: number | null }> {
    const env = this.deps.env();
    const rendered = renderUrl(n.url, { params: null, env: declaredEnv(run.workflow, env), step: {} });
    const url =
      typeof rendered === "string" ? checkOutboundUrl(rendered.trim(), this.deps.allowPrivate) : null;
    if (!(url instanceof URL)) return { ok: false, retry: false, afterMs: null };
    const doc = run.doc;
    const type = `run.${doc.status}`;
    const body = JSON.stringify(
      run.masker.maskJson({
        type,
        run_id: doc.run_id,
        workflow: run.workflow.name,
        status: doc.status,
        error: doc.error as unknown as JsonObject | null,
        created_at: doc.created_at,
        finished_at: doc.finished_at,
        rerun_url: `/runs/${doc.run_id}/rerun`,
        view_url: `/runs/${doc.run_id}/view`,
      }),
    );
    const id = `msg_${doc.run_id}_${type}`;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "workflow-edge",
      "webhook-id": id,
    };
    if (n.sign) {
      const secret = env[n.sign.secretEnv];
      // Fail closed: an entry that should be signed is never sent unsigned.
      if (typeof secret !== "string" || secret === "") return { ok: false, retry: false, afterMs: null };
      try {
        const key = await importSigningKey(secret);
        for (const [name, value] of await standardWebhookHeaders(key, id, this.deps.now(), body))
          headers[name] = value;
      } catch {
        return { ok: false, retry: false, afterMs: null };
      }
    }
    try {
      const res = await this.deps.fetch(url.href, {
        method: "POST",
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { ok: true, retry: false, afterMs: null };
      return {
        ok: false,
        retry: isRetryableStatus(res.status),
        afterMs: parseRetryAfter(res.headers.get("retry-after"), this.deps.now()),
      };
    } catch {
      return { ok: false, retry: true, afterMs: null };
    }
  }
}
