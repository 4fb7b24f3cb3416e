/**
 * Creating a run, shared by every trigger (an invoke, a cron schedule, a re-run): the run's
 * Durable Object is a fresh unique one, or, with an idempotency key, the one named by workflow +
 * key, so a replay (a client's retry, a sender's redelivery, the same scheduled time twice)
 * reaches the run that exists instead of making a second one. A workflow that shapes bursts
 * (flow-gates.ts) asks its first flow key before any run exists: the key may join the invoke to a
 * run that waits already (debounce, batch), refuse it (`on_full: skip`, a full queue), or let it
 * make a run that starts now or waits; a workflow that declares none contacts no key.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../../bundle.ts";
import { sha256Hex } from "../../common/sha256.ts";
import { createMasker } from "../../engine/mask.ts";
import { validateJson } from "../../engine/schema.ts";
import { collectSecrets } from "../../engine/secrets.ts";
import { afterAnswerMs } from "../after-answer.ts";
import type { Envelope } from "../envelope.ts";
import { parseRunId, placed, residencyOf, runIdOf } from "../jurisdiction.ts";
import { flowPlan } from "../keys/flow-gates.ts";
import { keepListed } from "../listing/listing-ride.ts";
import { RunRefusal } from "../refusal.ts";
import type { RunFlow } from "../run-doc.ts";
import { flowKeyStub, type RunRpc, runStub, type StartRequest, type StartResult } from "../run-rpc.ts";
import type { RateLimitSlot } from "./rate-limit.ts";

export interface StartOptions {
  params: JsonObject;
  request: JsonObject;
  idempotencyKey: string | null;
  /** How long to wait for the run to finish before answering (0: not at all). */
  waitS: number;
  /** Origin of the request that starts the run (approvals' `decide_url`); absent for schedules. */
  origin?: string | null;
  /** The limit the run's object counts a new run against (an invoke that may be a replay). */
  rateLimit?: RateLimitSlot | null;
  /** The run's id, chosen before (a re-run notes it in the old run first); default a new one. */
  runId?: string;
  definition?: StartRequest["definition"];
  rerun?: StartRequest["rerun"];
  /** Re-runs and schedules pass the keys but never join a debounce group or a batch. */
  coalesce?: boolean;
  /** The invoke's `traceparent` header (docs/operations.md, "Traces"). */
  traceparent?: string | null;
  /**
   * The caller's `waitUntil`: given, it carries an express run's listing entry after the answer
   * (listing.ts, `keepListed`) instead of the run's object sending it unguarded.
   */
  carry?: (work: Promise<void>) => void;
}

/** What starting a run gave: the run's answer, or one of the flow keys' (a joined run, a refusal). */
export type StartOutcome =
  | (StartResult & { queued?: boolean })
  | { outcome: "joined"; runId: string; envelope: Envelope | null }
  | { outcome: "skipped"; runId: string }
  | { outcome: "queue_full"; runId: string; retryAfterS: number };

/**
 * What every new run's inputs must pass before it is created: `params.schema` (422
 * `invalid_params`, paths and messages masked: they quote the caller's property names, which may
 * hold a secret value) and the secrets' configuration (500 `server_misconfigured`).
 */
export function checkRunInputs(
  def: Bundle,
  wf: CompiledWorkflow,
  params: JsonObject,
  env: Record<string, unknown>,
): void {
  const secrets = collectSecrets(def, wf, env);
  const violations = validateJson(wf.paramsSchema, params);
  if (violations.length > 0) {
    const masker = createMasker(secrets.values);
    throw new RunRefusal(
      "invalid_params",
      `the body does not match ${wf.name}'s params.schema`,
      violations.map((v) => ({ path: masker.maskText(v.path), message: masker.maskText(v.message) })),
    );
  }
  if (secrets.tooShort.length > 0) {
    throw new RunRefusal(
      "server_misconfigured",
      `secret env values must be at least 8 characters: ${secrets.tooShort.join(", ")}`,
    );
  }
}

export async function startRun(
  env: Env,
  workflowKey: string,
  wf: CompiledWorkflow,
  o: StartOptions,
): Promise<StartOutcome> {
  // The run's object, in its workflow's jurisdiction (a re-run's id, chosen before, names it).
  const given = o.runId !== undefined ? parseRunId(o.runId) : null;
  const residency = given ? given.residency : residencyOf(wf);
  const { stub, hex } = placed(env.RUNS, residency, (ns) => {
    const id = given
      ? ns.idFromString(given.hex)
      : o.idempotencyKey === null
        ? ns.newUniqueId()
        : ns.idFromName(`${wf.name}\n${o.idempotencyKey}`);
    return { stub: ns.get(id) as unknown as RunRpc, hex: id.toString() };
  });
  const runId = runIdOf(hex, residency);
  const req: StartRequest = {
    runId,
    workflowKey,
    params: o.params,
    request: o.request,
    bodyHash: o.idempotencyKey === null ? null : await canonicalHash(o.params),
    idempotencyKey: o.idempotencyKey,
    waitMs: o.waitS * 1000,
    origin: o.origin ?? null,
    rateLimit: o.rateLimit ?? null,
    definition: o.definition ?? null,
    rerun: o.rerun ?? null,
    traceparent: o.traceparent ?? null,
    carried: o.carry !== undefined,
  };
  const plan = flowPlan(wf, { params: o.params, request: o.request }, o.coalesce ?? true);
  // No flow keys, or a replay of a run that exists (its object answers it as ever).
  if (!plan || (o.idempotencyKey !== null && (await stub.view()) !== null))
    return carryListing(env, o, stub.start(req));
  const first = plan.gates[0];
  let flow: RunFlow;
  if (first) {
    const verdict = await flowKeyStub(env, residency, first.name).admit({
      gate: first.name,
      runId,
      settings: first.settings,
      priority: plan.priority,
      params: o.params,
      cancelOn: first.cancelOn,
    });
    if (verdict.outcome === "queue_full")
      return { outcome: "queue_full", runId, retryAfterS: verdict.retryAfterS };
    if (verdict.outcome === "skipped") return { outcome: "skipped", runId: verdict.runId };
    if (verdict.outcome === "joined") {
      const joined = runStub(env, verdict.runId);
      const envelope = joined && o.waitS > 0 ? await joined.waitFinished(o.waitS * 1000) : null;
      return { outcome: "joined", runId: verdict.runId, envelope };
    }
    const go = verdict.outcome === "start";
    flow = {
      gates: plan.gates,
      at: go ? 1 : 0,
      admitted: !go,
      priority: plan.priority,
      watches: plan.watches.map((w) => w.name),
      reason: verdict.outcome === "queued" ? verdict.reason : null,
      startsAt: verdict.outcome === "queued" ? verdict.startsAt : null,
    };
  } else {
    flow = {
      gates: [],
      at: 0,
      admitted: false,
      priority: 0,
      watches: plan.watches.map((w) => w.name),
      reason: null,
      startsAt: null,
    };
  }
  // A cancel_on whose key no other setting shares watches from its own key object.
  await Promise.all(plan.watches.map((w) => flowKeyStub(env, residency, w.name).watch(runId, w.signals)));
  return carryListing(env, o, stub.start({ ...req, flow }));
}

/**
 * A run that ended before its answer: its entry goes to the listing from here, after the answer
 * (`StartOptions.carry`). The carrying is handed to `carry` (the request's `waitUntil`) before the
 * run's answer is awaited, so a caller that hangs up while it waits (a client's timeout; a retry
 * follows) does not take the entry with it: the invocation lives on to receive and send it.
 */
async function carryListing(env: Env, o: StartOptions, pending: Promise<StartResult>): Promise<StartResult> {
  if (o.carry) {
    o.carry(
      pending.then(
        async (result) => {
          if (!("listing" in result) || !result.listing) return;
          const entry = result.listing;
          // After AFTER_ANSWER_MS, as the run's object would (after-answer.ts): the answer leaves first.
          await new Promise((resolve) => setTimeout(resolve, afterAnswerMs(env)));
          await keepListed(env, entry).catch(() =>
            console.error(JSON.stringify({ event: "listing.unsaved", run_id: result.runId })),
          );
        },
        // The start itself failed: its caller answers that.
        () => {},
      ),
    );
  }
  return pending;
}

/** Canonical JSON (sorted keys) so that equal bodies hash equal whatever their key order. */
function canonical(v: Json): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as JsonObject)[k] ?? null)}`).join(",")}}`;
}

function canonicalHash(v: Json): Promise<string> {
  return sha256Hex(canonical(v));
}
