/**
 * Runs one test case through the run lifecycle the Worker runs (src/run/lifecycle/lifecycle.ts: the same
 * start, deadline, approvals and end of a run, the same scheduler, executors, ledger and masking),
 * over an in-memory store on a virtual clock: what the Durable Object's alarm does, the clock's
 * timers do here. Steps reach nothing real: executors answer from the case's mocks (mocks.ts,
 * tool-mocks.ts), humans from its `approvals` (approvals.ts).
 */

import { createHash } from "node:crypto";
import type { Bundle, CompiledWorkflow, Json, JsonObject, Residency } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import type { TestCase } from "../compiler/test-files/suite.ts";
import type { Masker } from "../engine/mask.ts";
import { shownUrl } from "../engine/net.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "../engine/outbound.ts";
import { declaredEnv, usesAgents } from "../engine/secrets.ts";
import type { StepContext } from "../engine/types.ts";
import { StepError, type StepRecord } from "../engine/types.ts";
import { resetModelRotation } from "../gateway/select.ts";
import type { Envelope } from "../run/envelope.ts";
import { runIdOf } from "../run/jurisdiction.ts";
import { RunLifecycle } from "../run/lifecycle/lifecycle.ts";
import type { RunEffect, Wake } from "../run/lifecycle/run-plan.ts";
import { listKey } from "../run/listing/listing-layout.ts";
import { memoryKv } from "../run/memory-kv.ts";
import { RunStore } from "../run/run-store.ts";
import { recordRequest } from "../run/start/run-request.ts";
import { executors } from "../steps/index.ts";
import { invokeResponse } from "../triggers/webhook/response.ts";
import { caseApprovals } from "./approvals.ts";
import { type MockLog, mockedExecutors } from "./mocks.ts";
import { VirtualClock } from "./virtual-clock.ts";

/** Real time one case may take before it is reported as stuck. */
const REAL_LIMIT_MS = 20_000;

export interface CaseRun {
  envelope: Envelope;
  /** Final step records by slash path (outputs and errors masked, as stored). */
  records: Map<string, StepRecord>;
  log: MockLog;
  masker: Masker;
  /** What `assert` expressions see besides the run: params and env as the run saw them (masked). */
  params: Json;
  env: JsonObject;
  /** Virtual ms from the invoke to the end of the run. */
  virtualMs: number;
  /** What the invoke would answer with `invoke.response` (null without it): `{status, content_type, body}`. */
  response: Json;
  /** The run's approvals as `GET /runs/{id}/approvals` lists them. */
  approvals: Json[];
}

/** A run id like the Worker's (64 hex digits), fixed per case so test output is reproducible. */
/** A case's run id: stable per case, and in its workflow's jurisdiction (`eu-…`) as a deployed run's. */
export function caseRunId(fileKey: string, tc: TestCase, residency: Residency | null = null): string {
  return runIdOf(createHash("sha256").update(`${fileKey}#${tc.index}:${tc.name}`).digest("hex"), residency);
}

/**
 * Values a case need not give: with every agent step mocked, a provider's API key (and a
 * `base_url` read from env) only has to be present for the request to be built.
 */
function providerPlaceholders(bundle: Bundle, wf: CompiledWorkflow, env: Record<string, string>) {
  const out: Record<string, string> = {};
  if (!usesAgents(bundle, wf)) return out;
  for (const p of bundle.gateway.providers) {
    if (p.apiKeyEnv !== null && env[p.apiKeyEnv] === undefined) out[p.apiKeyEnv] = "mock-provider-key";
    if (p.baseUrl?.startsWith("env:")) {
      const name = p.baseUrl.slice(4);
      if (env[name] === undefined) out[name] = `https://${p.name}.model.test`;
    }
  }
  return out;
}

/** The invoke's answer when the workflow has `invoke.response`, rendered as the Worker does. */
async function renderedResponse(wf: CompiledWorkflow, envelope: Envelope, env: Record<string, string>) {
  let res: Response;
  try {
    res = invokeResponse(wf, wf.invoke.response as NonNullable<typeof wf.invoke.response>, envelope, env);
  } catch (e) {
    if (!(e instanceof HttpProblem)) throw e;
    res = e.toResponse();
  }
  const type = res.headers.get("content-type");
  const text = await res.text();
  let body: Json = text === "" ? null : text;
  if (type?.includes("json") && text !== "") body = JSON.parse(text) as Json;
  return { status: res.status, content_type: type, body };
}

export async function runCase(
  bundle: Bundle,
  workflowKey: string,
  tc: TestCase,
  runId: string,
  /** An eval with `--live`: agent steps and judges without a mock call their providers. */
  live: { fetch: typeof fetch } | null = null,
): Promise<CaseRun> {
  const wf = bundle.workflows[workflowKey];
  if (!wf) throw new Error(`workflow ${workflowKey} is not in the bundle`);
  const clock = new VirtualClock(Date.now());
  // Round-robin groups start at their first model in every case, whatever ran before.
  resetModelRotation();

  const log: MockLog = { requests: new Map(), unmocked: [] };
  const limiter = new OutboundLimiter(MAX_OUTBOUND);
  const env = { ...tc.env, ...providerPlaceholders(bundle, wf, tc.env) };
  const unmocked = (message: string) => {
    log.unmocked.push(message);
    return new StepError("unmocked_step", message);
  };
  const approvals = caseApprovals({ approvals: tc.approvals, runId, clock, unmocked });
  let judging: Promise<void> | null = null;
  // The object's alarm: one virtual timer, at the time the lifecycle asks to be woken.
  let cancelWake: () => void = () => {};
  const wake = (w: Wake | null) => {
    cancelWake();
    cancelWake = () => {};
    if (w !== null)
      cancelWake = clock.setTimer(() => run.alarm(clock.now()), Math.max(0, w.at - clock.now()));
  };
  // What the Durable Object does after a run, a case does at once: there is no listing, no key
  // object and nobody to notify (every effect reports success, so nothing is retried).
  const perform = (effects: RunEffect[]) => {
    for (const e of effects) {
      if (e.type === "list")
        queueMicrotask(
          () =>
            run.current &&
            run.reported({ type: "list", key: listKey(run.current.status, run.deliverySummary()), ok: true }),
        );
      if (e.type === "release") queueMicrotask(() => run.reported({ type: "release", ok: true }));
      if (e.type === "deliver") queueMicrotask(() => run.reported({ type: "deliver", next: null }));
      // The judges after the answer (docs/file-format.md, "Scores"), answered by the case's mocks.
      if (e.type === "judge") judging = run.judge();
      if (e.type === "ask_turn")
        queueMicrotask(() =>
          run.reported({ type: "ask_turn", gate: e.gate.name, verdict: { outcome: "start" } }),
        );
    }
  };
  // The masker exists once the run has started; executors read it when they run.
  const masker = {
    maskJson: (v: Json) => run.runMasker.maskJson(v),
    maskText: (t: string) => run.runMasker.maskText(t),
  } as Masker;
  const run: RunLifecycle = new RunLifecycle(
    new RunStore(memoryKv()),
    {
      env,
      executors: mockedExecutors(
        executors,
        {
          mocks: tc.mocks,
          masker,
          clock,
          limiter,
          allowPrivate: env.ALLOW_PRIVATE_WEBHOOKS === "true",
          ...(live ? { live: { fetch: live.fetch as StepContext["fetch"] } } : {}),
        },
        log,
      ),
      fetch: (input) => {
        const url = new URL(input instanceof Request ? input.url : input);
        return Promise.reject(unmocked(`a request to ${shownUrl(url, false)} is not mocked`));
      },
      clock,
      outboundLimit: MAX_OUTBOUND,
      allowPrivate: false,
      notifyFetch: () => Promise.reject(new Error("workflow tests send no notifications")),
    },
    { wake, perform },
    {
      heartbeatMs: null,
      // A test judges every case: its judges' mocks answer them (an eval reads their scores).
      judgeEvery: true,
      approvals: (path, inner) => approvals.host(path, inner),
      approvalRequested: (rec, created) => approvals.requested(rec, created, run),
    },
  );

  const created = clock.now();
  run.start({
    runId,
    bundle,
    workflowKey,
    params: tc.params,
    request: recordRequest(wf.invoke.headers, new Headers(tc.requestHeaders ?? {})),
    bodyHash: null,
    idempotencyKey: null,
    origin: null,
  });
  // Until the run has ended (at its deadline that is at once, as in the Worker: steps still
  // unwinding cannot change the settled records).
  await clock.run(run.ended(), REAL_LIMIT_MS);
  // A failed or canceled run's compensations follow its end (on the virtual clock too).
  await clock.run(run.compensationSettled(), REAL_LIMIT_MS);
  // Its judges, after its answer: an eval reads their scores.
  for (let i = 0; i < 3 && judging !== null; i++) {
    const pending: Promise<void> = judging;
    judging = null;
    await clock.run(pending, REAL_LIMIT_MS);
  }
  cancelWake();
  // A judge without a mock is no failure of the case: its score says so (an eval reports it skipped).
  log.unmocked = log.unmocked.filter((m) => !m.includes("/judge/"));

  const doc = run.current;
  if (!doc || run.active) throw new Error("the run ended without an outcome");
  const envelope = run.envelope();
  const finishedAt = Date.parse(doc.finished_at ?? doc.created_at);
  const runMasker = run.runMasker;
  return {
    envelope,
    response: wf.invoke.response ? await renderedResponse(wf, envelope, tc.env) : null,
    records: new Map(run.stepRecords),
    log,
    masker: runMasker,
    params: doc.params,
    env: runMasker.maskJson(declaredEnv(wf, tc.env)) as JsonObject,
    virtualMs: finishedAt - created,
    approvals: (run.approvals() ?? []) as unknown as Json[],
  };
}
