/**
 * A run's deliveries (docs/triggers.md, "Deliveries"): every notification the Worker sends for
 * it — each `notify:` entry matching its final status, each approval request with a notification
 * URL — sent by the one sender here, on the schedule of delivery-rules.ts.
 *
 * What is due follows from the run itself (its final status and pinned definition, its approval
 * rows), so nothing is written before the first attempt; each attempt writes the delivery's own
 * row once (run-store.ts), after the answer, from the object's effects and its alarm. An eviction
 * between attempts only means an attempt is made again (at least once), with the same
 * `webhook-id` and a fresh Standard Webhooks signature.
 *
 * Ids: `msg_<run_id>_<type>` for a notification (a later entry sending the same type adds
 * `_<entry index>`), `msg_<run_id>_<approval id>` for an approval request: the run is found from
 * the id alone.
 */
import type { CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { importSigningKey, standardWebhookHeaders } from "../../common/standard-webhooks.ts";
import { withTimeout } from "../../common/timeout.ts";
import { MASK, type Masker } from "../../engine/mask.ts";
import { checkOutboundUrl, shownUrl } from "../../engine/net.ts";
import { networkFailure, parseRetryAfter } from "../../engine/retry.ts";
import { declaredEnv } from "../../engine/secrets.ts";
import { renderUrl } from "../../engine/substitute.ts";
import { httpAttributes, httpOutcome, type StepTracer } from "../../engine/trace.ts";
import type { StepRecord } from "../../engine/types.ts";
import { parseRunId } from "../jurisdiction.ts";
import type { RunDoc } from "../run-doc.ts";
import type { RunStore } from "../run-store.ts";
import { type ApprovalRecord, decideUrl, publicApproval } from "../waits/approvals.ts";
import type { WaitRecord } from "../waits/waits.ts";
import { pushTargets, taskChanges } from "./a2a-push.ts";
import {
  ATTEMPT_TIMEOUT_MS,
  type AttemptOutcome,
  afterAttempt,
  DEFAULT_SCHEDULE_S,
  type DeliveryAttempt,
  type DeliveryRecord,
  type DeliveryState,
  type DeliveryTarget,
  grantAttempt,
  isDue,
  newDelivery,
} from "./delivery-rules.ts";

export type { DeliveryTarget } from "./delivery-rules.ts";

/** A delivery as the API shows it (docs/http-api.md, `GET /deliveries`). */
export interface PublicDelivery {
  id: string;
  run_id: string;
  workflow: string;
  type: string;
  url: string;
  /** `canceled`: an approval request no longer sent, its approval decided before it was delivered. */
  state: DeliveryState | "canceled";
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
}

/** What the deliveries of one run are made from. */
export interface DeliverySource {
  doc: RunDoc;
  workflow: CompiledWorkflow;
  env: Record<string, unknown>;
  masker: Masker;
  approvals: ApprovalRecord[];
  /** What A2A push deliveries follow from (read only for a run with push configs). */
  push?: { records: ReadonlyMap<string, StepRecord>; waits: () => WaitRecord[]; output: () => Json };
}

const TERMINAL = new Set(["complete", "failed", "canceled"]);

/** Every delivery of the run so far: its notifications once it has ended, its approval requests. */
export function deliveryTargets(s: DeliverySource): DeliveryTarget[] {
  const { doc, workflow: wf } = s;
  const out: DeliveryTarget[] = [];
  for (const a of s.approvals) {
    if (!a.notify) continue;
    const target = a.notify;
    out.push({
      id: `msg_${doc.run_id}_${a.id}`,
      type: "approval.requested",
      url: target.url,
      fromSecret: s.masker.maskText(target.url) !== target.url,
      signSecret: target.sign_secret,
      schedule: DEFAULT_SCHEDULE_S,
      createdMs: Date.parse(a.created_at),
      body: () =>
        JSON.stringify({
          ...(publicApproval(a) as unknown as JsonObject),
          decide_url: decideUrl(doc.origin ?? null, doc.run_id, a.id),
        }),
      idempotencyKey: `${doc.run_id}:${a.id}`,
      entry: null,
      ...(a.status !== "pending" ? { moot: true } : {}),
    });
  }
  if (doc.a2a_push?.length && s.push) {
    const push = s.push;
    const changes = taskChanges(doc, push.records, s.approvals, push.waits());
    out.push(...pushTargets({ doc, changes, output: push.output, masker: s.masker }));
  }
  if (!TERMINAL.has(doc.status)) return out;
  const env = declaredEnv(wf, s.env);
  const type = `run.${doc.status}`;
  let sameType = 0;
  (wf.notify ?? []).forEach((n, i) => {
    if (!n.on.includes(doc.status as "failed")) return;
    const rendered = renderUrl(n.url, { params: null, env, step: {} });
    const secret = n.sign ? s.env[n.sign.secretEnv] : null;
    out.push({
      id: sameType++ === 0 ? `msg_${doc.run_id}_${type}` : `msg_${doc.run_id}_${type}_${i}`,
      type,
      ...renderedUrl(rendered, s.masker),
      signSecret: n.sign ? (typeof secret === "string" ? secret : "") : null,
      schedule: n.retry?.scheduleS ?? DEFAULT_SCHEDULE_S,
      createdMs: Date.parse(doc.finished_at ?? doc.created_at),
      body: () =>
        JSON.stringify(
          s.masker.maskJson({
            type,
            run_id: doc.run_id,
            workflow: wf.name,
            status: doc.status,
            error: doc.error as unknown as JsonObject | null,
            created_at: doc.created_at,
            finished_at: doc.finished_at,
            // Absolute, on the origin that started the run (PUBLIC_URL for a schedule's), when it has one.
            rerun_url: `${doc.origin ?? ""}/runs/${doc.run_id}/rerun`,
            view_url: `${doc.origin ?? ""}/runs/${doc.run_id}/view`,
          }),
        ),
      idempotencyKey: null,
      entry: i,
    });
  });
  // A compensation that failed after its attempts (docs/file-format.md, "Compensation").
  const comp = doc.compensation;
  if (comp?.status === "failed") {
    const failedAt = comp.steps.reduce(
      (t, st) => Math.max(t, st.finished_at ? Date.parse(st.finished_at) : 0),
      0,
    );
    let n = 0;
    (wf.notify ?? []).forEach((entry, i) => {
      if (!entry.on.includes("compensation_failed")) return;
      const rendered = renderUrl(entry.url, { params: null, env, step: {} });
      const secret = entry.sign ? s.env[entry.sign.secretEnv] : null;
      out.push({
        id:
          n++ === 0 ? `msg_${doc.run_id}_compensation_failed` : `msg_${doc.run_id}_compensation_failed_${i}`,
        type: "run.compensation_failed",
        ...renderedUrl(rendered, s.masker),
        signSecret: entry.sign ? (typeof secret === "string" ? secret : "") : null,
        schedule: entry.retry?.scheduleS ?? DEFAULT_SCHEDULE_S,
        createdMs: failedAt || Date.parse(doc.finished_at ?? doc.created_at),
        body: () =>
          JSON.stringify(
            s.masker.maskJson({
              type: "run.compensation_failed",
              run_id: doc.run_id,
              workflow: wf.name,
              status: doc.status,
              error: doc.error as unknown as JsonObject | null,
              compensation: comp as unknown as JsonObject,
              created_at: doc.created_at,
              finished_at: doc.finished_at,
              compensate_url: `${doc.origin ?? ""}/runs/${doc.run_id}/compensate`,
              view_url: `${doc.origin ?? ""}/runs/${doc.run_id}/view`,
            }),
          ),
        idempotencyKey: null,
        entry: i,
      });
    });
  }
  return out;
}

/** A notification's rendered url, and whether it holds a secret. */
function renderedUrl(rendered: Json, masker: Masker): { url: string; fromSecret: boolean } {
  const url = typeof rendered === "string" ? rendered.trim() : "";
  return { url, fromSecret: masker.maskText(url) !== url };
}

/** The run a delivery id belongs to (null: not one of ours). */
export function deliveryRunId(id: string): string | null {
  const runId = /^msg_((?:[a-z-]+-)?[0-9a-f]{64})_/.exec(id)?.[1];
  return runId !== undefined && parseRunId(runId) ? runId : null;
}

/** The one sender: a POST of the target's body, signed when the target signs, within ATTEMPT_TIMEOUT_MS. */
export async function sendDelivery(
  t: DeliveryTarget,
  io: {
    fetch: (input: string, init: RequestInit) => Promise<Response>;
    allowPrivate: boolean;
    now: number;
    /** The attempt's client span, a child of the run's root span (docs/operations.md, "Traces"). */
    trace?: StepTracer | undefined;
    /** Which attempt this is (1: the first). */
    attempt?: number;
  },
): Promise<AttemptOutcome> {
  const refused = (error: string): AttemptOutcome => ({ status: null, error, retryAfterMs: null });
  const url = t.url === "" ? null : checkOutboundUrl(t.url, io.allowPrivate);
  if (!(url instanceof URL)) return refused("url_refused");
  const body = t.body();
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "workflow-edge",
    "webhook-id": t.id,
    ...t.headers,
  };
  if (t.idempotencyKey) headers["idempotency-key"] = t.idempotencyKey;
  if (t.signSecret !== null) {
    // Fail closed: a delivery that should be signed is never sent unsigned.
    if (t.signSecret === "") return refused("signing_secret_unset");
    try {
      const key = await importSigningKey(t.signSecret);
      for (const [name, value] of await standardWebhookHeaders(key, t.id, io.now, body))
        headers[name] = value;
    } catch {
      return refused("signing_secret_invalid");
    }
  }
  const span = io.trace?.client("POST", httpAttributes("POST", url, io.attempt ?? 1, t.fromSecret));
  if (span) headers.traceparent = span.traceparent;
  try {
    const res = await withTimeout(ATTEMPT_TIMEOUT_MS, async (signal) => {
      const r = await io.fetch(url.href, { method: "POST", headers, body, redirect: "manual", signal });
      await r.body?.cancel().catch(() => {});
      return r;
    });
    span?.end(httpOutcome(res.status), res.status >= 300 ? String(res.status) : undefined);
    return {
      status: res.status,
      error: res.status >= 200 && res.status < 300 ? null : `http_${res.status}`,
      retryAfterMs: parseRetryAfter(res.headers.get("retry-after"), io.now),
    };
  } catch (err) {
    span?.end(httpOutcome(null, err), "the request failed");
    const timeout = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return refused(timeout ? "timeout" : `network: ${networkFailure(err, t.fromSecret)}`);
  }
}

export interface DeliveryDeps {
  store: RunStore;
  now(): number;
  random(): number;
  fetch: (input: string, init: RequestInit) => Promise<Response>;
  allowPrivate: boolean;
  /** Client spans of attempts under the run's root span (none: the run exports no trace). */
  trace?(): StepTracer | undefined;
}

/** The deliveries of one run: their records (loaded once, and only by a run that has any), attempts, grants. */
export class RunDeliveries {
  private rows: Map<string, DeliveryRecord> | null = null;
  private sending = new Set<string>();
  private readonly deps: DeliveryDeps;

  constructor(deps: DeliveryDeps) {
    this.deps = deps;
  }

  /** Each target's record: stored, or new (pending, due on its schedule). */
  records(targets: readonly DeliveryTarget[]): DeliveryRecord[] {
    if (targets.length === 0) return [];
    const rows = this.load(targets);
    return targets.map((t) => rows.get(t.id) ?? newDelivery(t.id, t.createdMs, t.schedule));
  }

  /** When the next attempt is due (null: nothing pending). */
  nextAttempt(targets: readonly DeliveryTarget[]): number | null {
    let next: number | null = null;
    const records = this.records(targets);
    for (const [i, r] of records.entries())
      if (
        r.state === "pending" &&
        r.next !== null &&
        !targets[i]?.moot &&
        !waitsForEarlier(targets, records, i)
      )
        next = next === null ? r.next : Math.min(next, r.next);
    return next;
  }

  /** Makes every attempt due now, each target's one at a time; each writes its record after it. */
  async pass(targets: readonly DeliveryTarget[]): Promise<void> {
    const now = this.deps.now();
    const records = this.records(targets);
    const due = targets.filter(
      (t, i) =>
        !t.moot &&
        !this.sending.has(t.id) &&
        isDue(records[i] as DeliveryRecord, now) &&
        !waitsForEarlier(targets, records, i),
    );
    await Promise.all(
      due.map(async (t) => {
        this.sending.add(t.id);
        try {
          const earlier = this.load(targets).get(t.id);
          const outcome = await sendDelivery(t, {
            fetch: this.deps.fetch,
            allowPrivate: this.deps.allowPrivate,
            now,
            trace: this.deps.trace?.(),
            attempt: (earlier?.attempts.length ?? 0) + 1,
          });
          const rows = this.load(targets);
          const before = rows.get(t.id) ?? newDelivery(t.id, t.createdMs, t.schedule);
          const after = afterAttempt(before, outcome, this.deps.now(), t.schedule, this.deps.random());
          rows.set(t.id, after);
          this.deps.store.saveDelivery(after);
        } finally {
          this.sending.delete(t.id);
        }
      }),
    );
  }

  /** One attempt more, now (`POST /deliveries/{id}/retry`); null: no such delivery. */
  grant(id: string, targets: readonly DeliveryTarget[]): DeliveryRecord | null {
    const t = targets.find((x) => x.id === id);
    if (!t) return null;
    return this.update(t, targets, (r) => grantAttempt(r, this.deps.now(), t.schedule));
  }

  /**
   * Every failed delivery created at or after `since` gets one attempt more, now; how many. The
   * object runs this in one turn: a failed delivery turns pending here once, so concurrent
   * recovers never attempt it twice.
   */
  recover(since: number, targets: readonly DeliveryTarget[]): number {
    let n = 0;
    for (const [i, r] of this.records(targets).entries()) {
      const t = targets[i] as DeliveryTarget;
      if (r.state !== "failed" || Date.parse(r.created_at) < since) continue;
      this.update(t, targets, (x) => grantAttempt(x, this.deps.now(), t.schedule));
      n++;
    }
    return n;
  }

  /** How many deliveries the run has, and how many failed (what its listing entry carries). */
  summary(targets: readonly DeliveryTarget[]): { total: number; failed: number } {
    const records = this.records(targets);
    return { total: records.length, failed: records.filter((r) => r.state === "failed").length };
  }

  /** The API's shape of each delivery (URLs masked). */
  list(targets: readonly DeliveryTarget[], doc: RunDoc, workflow: string, masker: Masker): PublicDelivery[] {
    return this.records(targets).map((r, i) => {
      const t = targets[i] as DeliveryTarget;
      return {
        id: r.id,
        run_id: doc.run_id,
        workflow,
        type: t.type,
        url: t.fromSecret ? secretUrlShown(t.url) : masker.maskText(t.url),
        state: t.moot && r.state === "pending" ? "canceled" : r.state,
        attempts: r.attempts,
        next_attempt_at:
          r.state === "pending" && r.next !== null && !t.moot ? new Date(r.next).toISOString() : null,
        created_at: r.created_at,
      };
    });
  }

  /** After the run's storage was cleared. */
  reset(): void {
    this.rows = null;
  }

  private update(
    t: DeliveryTarget,
    targets: readonly DeliveryTarget[],
    change: (r: DeliveryRecord) => DeliveryRecord,
  ): DeliveryRecord {
    const rows = this.load(targets);
    const next = change(rows.get(t.id) ?? newDelivery(t.id, t.createdMs, t.schedule));
    rows.set(t.id, next);
    this.deps.store.saveDelivery(next);
    return next;
  }

  private load(targets: readonly DeliveryTarget[]): Map<string, DeliveryRecord> {
    if (this.rows) return this.rows;
    const { records, legacy } = this.deps.store.deliveries();
    this.rows = new Map(records.map((r) => [r.id, r]));
    if (legacy) {
      // Notified before deliveries existed: an entry whose outcome was kept is no longer pending
      // (delivered, or given up after its 3 attempts); the rest go on on the new schedule.
      for (const t of targets) {
        if (t.entry !== null && legacy[String(t.entry)]?.done && !this.rows?.has(t.id))
          this.rows?.set(t.id, {
            ...newDelivery(t.id, t.createdMs, t.schedule),
            state: "delivered",
            next: null,
          });
      }
    }
    return this.rows;
  }
}

/**
 * Whether target `i` waits for the delivery before it (an A2A config's deliveries go in order: the
 * next is attempted once the previous was delivered or given up).
 */
function waitsForEarlier(targets: readonly DeliveryTarget[], records: DeliveryRecord[], i: number): boolean {
  const after = targets[i]?.after;
  if (!after) return false;
  const j = targets.findIndex((t) => t.id === after);
  return j >= 0 && records[j]?.state === "pending";
}

/** A url that holds a secret, as the API shows it: its origin only, or `***` when it does not parse. */
function secretUrlShown(url: string): string {
  try {
    return shownUrl(new URL(url), true);
  } catch {
    return MASK;
  }
}
