/**
 * Runs one test case through the engine the Worker runs: the pipeline scheduler, the real step
 * executors, the budget ledger, masking and the run envelope, driven through an in-memory RunHost
 * on a virtual clock. What the run object adds around the engine (a deadline that aborts the
 * run, how a run ends, masked params) is reproduced here from the same pure modules; storage,
 * events and alarms are left out because nothing in a test reads them. Tool servers answer from
 * the case's mocks (tool-mocks.ts), humans from its `approvals` (approvals.ts), and a step's
 * checkpoint is kept in memory.
 */
import { createHash } from "node:crypto";
import type { Bundle, CompiledWorkflow, Json, JsonObject } from "../bundle.ts";
import type { TestCase } from "../compiler/test-files.ts";
import { createLedger } from "../engine/budget.ts";
import { createMasker, type Masker } from "../engine/mask.ts";
import { RunAbort, type RunHost, runPipeline } from "../engine/scheduler.ts";
import { StepError, type StepRecord } from "../engine/types.ts";
import { resetModelRotation } from "../gateway/select.ts";
import { HttpProblem } from "../http/problem.ts";
import { recordRequest } from "../http/triggers/request-headers.ts";
import { invokeResponse } from "../http/triggers/response.ts";
import { buildEnvelope, type Envelope, pinDefinition, type RunDoc, type RunError } from "../run/envelope.ts";
import { MAX_OUTBOUND, OutboundLimiter } from "../run/outbound.ts";
import { collectSecrets, declaredEnv, usesAgents } from "../run/secrets.ts";
import { deadlineError, failureError, settleRecords } from "../run/settle.ts";
import { executors } from "../steps/index.ts";
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

interface Ended {
  status: "complete" | "failed";
  error: RunError | null;
  /** Virtual epoch ms. */
  at: number;
  records: Map<string, StepRecord>;
}

/** A run id like the Worker's (64 hex digits), fixed per case so test output is reproducible. */
export function caseRunId(fileKey: string, tc: TestCase): string {
  return createHash("sha256").update(`${fileKey}#${tc.index}:${tc.name}`).digest("hex");
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
): Promise<CaseRun> {
  // The run is pinned to its own slice of the bundle, as in the Worker.
  const def = pinDefinition(bundle, workflowKey);
  const wf = def.workflows[workflowKey];
  if (!wf) throw new Error(`workflow ${workflowKey} is not in the bundle`);
  const masker = createMasker(collectSecrets(def, wf, tc.env).values);
  const clock = new VirtualClock(Date.now());
  // Round-robin groups start at their first model in every case, whatever ran before.
  resetModelRotation();

  const log: MockLog = { requests: new Map(), unmocked: [] };
  const limiter = new OutboundLimiter(MAX_OUTBOUND);
  const created = clock.now();
  const deadline = created + wf.policy.timeoutS * 1000;
  const records = new Map<string, StepRecord>();
  const approvals = caseApprovals({
    approvals: tc.approvals,
    runId,
    deadline,
    masker,
    clock,
    records,
    unmocked: (message) => {
      log.unmocked.push(message);
      return new StepError("unmocked_step", message);
    },
  });
  const checkpoints = new Map<string, Json>();
  const allowPrivate = tc.env.ALLOW_PRIVATE_WEBHOOKS === "true";
  const host: RunHost = {
    bundle: def,
    runId,
    env: { ...tc.env, ...providerPlaceholders(def, wf, tc.env) },
    executors: mockedExecutors(executors, { mocks: tc.mocks, masker, clock, limiter, allowPrivate }, log),
    approvals: (path) => approvals.host(path),
    checkpoint: (path) => ({
      load: () => checkpoints.get(path) ?? null,
      // Masked, as the run object stores it.
      save: (state) => checkpoints.set(path, masker.maskJson(state)),
    }),
    masker,
    fetch: (input) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const message = `a request to ${url.protocol}//${url.host}${url.pathname} is not mocked`;
      log.unmocked.push(message);
      return Promise.reject(new StepError("unmocked_step", message));
    },
    now: () => clock.now(),
    clock,
    restored: new Map(),
    records,
    outboundLimit: MAX_OUTBOUND,
    onStepFinished: () => {},
  };

  // As the run object stores them: masked, and that is what the pipeline reads.
  const params = masker.maskJson(tc.params);
  const request = masker.maskJson(recordRequest(wf.invoke.headers, new Headers(tc.requestHeaders ?? {})));
  // How the run ended: set once, by the first of its pipeline's end and its deadline.
  const outcome: { ended: Ended | null } = { ended: null };
  let signalEnd: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    signalEnd = resolve;
  });
  const end = (status: Ended["status"], error: RunError | null) => {
    if (outcome.ended) return;
    const at = clock.now();
    outcome.ended = { status, error, at, records: settleRecords(def, wf, host.records, at, "run_failed") };
    signalEnd();
  };

  // The run object's alarm: at the deadline the run ends at once, whatever its steps are doing.
  const controller = new AbortController();
  controller.signal.addEventListener("abort", () => end("failed", deadlineError(wf, host.records)), {
    once: true,
  });
  const cancelDeadline = clock.setTimer(() => controller.abort(new RunAbort("timeout")), deadline - created);
  const options = {
    prefix: "",
    params,
    env: declaredEnv(wf, tc.env),
    request,
    deadline,
    signal: controller.signal,
    budget: createLedger(wf.policy.costBudgetUsd),
    webhooksAllowed: true,
  };
  runPipeline(host, wf, options).then(
    () => end("complete", null),
    (err: unknown) =>
      end("failed", err instanceof RunAbort ? deadlineError(wf, host.records) : failureError(err, masker)),
  );
  // Until the run has ended (at its deadline that is at once, as in the Worker: steps still
  // unwinding cannot change the settled records).
  await clock.run(ended, REAL_LIMIT_MS);
  cancelDeadline();
  approvals.close();

  const final = outcome.ended;
  if (!final) throw new Error("the run ended without an outcome");
  const finishedAt = final.at;
  const doc: RunDoc = {
    run_id: runId,
    workflow_key: workflowKey,
    status: final.status,
    error: final.error,
    params,
    request,
    created_at: new Date(created).toISOString(),
    deadline: new Date(deadline).toISOString(),
    finished_at: new Date(finishedAt).toISOString(),
    body_hash: null,
    idempotency_key: null,
    def,
    ledger: null,
  };
  const envelope = masker.maskJson(
    buildEnvelope(doc, final.records, finishedAt) as unknown as Json,
  ) as unknown as Envelope;
  return {
    envelope,
    response: wf.invoke.response ? await renderedResponse(wf, envelope, tc.env) : null,
    records: final.records,
    log,
    masker,
    params,
    env: masker.maskJson(declaredEnv(wf, tc.env)) as JsonObject,
    virtualMs: finishedAt - created,
    approvals: approvals.list(),
  };
}
