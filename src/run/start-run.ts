/**
 * Creating a run, shared by every trigger (an invoke, a cron schedule): the run's Durable Object
 * is a fresh unique one, or, with an idempotency key, the one named by workflow + key, so a
 * replay (a client's retry, a sender's redelivery, the same scheduled time twice) reaches the
 * run that exists instead of making a second one.
 */
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import { createMasker } from "../engine/mask.ts";
import { validateJson } from "../engine/schema.ts";
import { collectSecrets } from "../engine/secrets.ts";
import { renderInvokeKey } from "./invoke-keys.ts";
import type { RateLimitSlot } from "./rate-limit.ts";
import { RunRefusal } from "./refusal.ts";
import type { RunRpc, StartRequest, StartResult } from "./run-rpc.ts";

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
  concurrency?: StartRequest["concurrency"];
}

/**
 * `invoke.concurrency` of `wf` for these inputs: its key's object (`<workflow>\n<key>`, the key
 * rendered from params and request; absent: one key for the workflow) and the limit.
 */
export function concurrencyOf(
  wf: CompiledWorkflow,
  seen: { params: JsonObject; request: JsonObject },
): StartRequest["concurrency"] {
  const cc = wf.invoke.concurrency;
  if (!cc) return null;
  // A key that renders to nothing: the workflow's common key.
  const key = cc.key ? renderInvokeKey(cc.key, seen) : "";
  return { gate: `${wf.name}\n${key}`, limit: cc.limit };
}

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
): Promise<StartResult> {
  const ns = env.RUNS;
  const id =
    o.runId !== undefined
      ? ns.idFromString(o.runId)
      : o.idempotencyKey === null
        ? ns.newUniqueId()
        : ns.idFromName(`${wf.name}\n${o.idempotencyKey}`);
  const stub = ns.get(id) as unknown as RunRpc;
  return stub.start({
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
    concurrency: o.concurrency ?? null,
  });
}

/** Canonical JSON (sorted keys) so that equal bodies hash equal whatever their key order. */
function canonical(v: Json): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as JsonObject)[k] ?? null)}`).join(",")}}`;
}

async function canonicalHash(v: Json): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonical(v)));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
