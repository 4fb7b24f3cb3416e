/**
 * HTTP routes (docs/http-api.md). The invoke path finds the workflow, then the webhook trigger
 * (src/triggers/webhook/invoke.ts) checks, in this order, the caller's credentials or the sender's
 * signature, the body (size, content type, JSON object or form), `params.schema`, the secrets'
 * configuration, the rate limit; only then is a run created in its own Durable Object. Every route that reads runs checks `requireReader`. Every error leaves as
 * application/problem+json through `HttpProblem`, never with a stack or a secret.
 */

import { Hono } from "hono";
import workflowBundle from "workflow-bundle";
import { type Bundle, type CompiledWorkflow, isSignature, SIGNAL_NAME } from "./bundle.ts";
import { hint as didYouMean } from "./common/did-you-mean.ts";
import { HttpProblem } from "./common/problem.ts";
import { buildFailed, buildFailedAnswer } from "./http/build-failed.ts";
import { readDecision } from "./http/decision.ts";
import { deliveryListPage, parseSince, recoverDeliveries } from "./http/deliveries.ts";
import { unmatched } from "./http/methods.ts";
import { mountProtocolRoutes, waitUntilOf } from "./http/protocol-routes.ts";
import { bulkCursor, readBulkRerun, readRerunRequest } from "./http/rerun.ts";
import { runListPage, single, workflowParam } from "./http/run-list.ts";
import { mountScheduleRoutes } from "./http/schedule-routes.ts";
import { mountScoreRoutes } from "./http/score-routes.ts";
import { mountOpenApi } from "./openapi/routes.ts";
import { deliveryRunId } from "./run/deliveries/deliveries.ts";
import { residencyOf } from "./run/jurisdiction.ts";
import { flowKeyName } from "./run/keys/flow-key-rpc.ts";
import { signalKeyStub } from "./run/keys/signal-key-rpc.ts";
import { forgetRun } from "./run/listing/listing.ts";
import { RunRefusal } from "./run/refusal.ts";
import { pinDefinition } from "./run/run-doc.ts";
import { declaredSignals } from "./run/run-graph.ts";
import { flowKeyStub, type RunRpc, runStub } from "./run/run-rpc.ts";
import { type Deployed, rerun, rerunMany } from "./run/start/reruns.ts";
import { startRun } from "./run/start/start-run.ts";
import { readParams } from "./triggers/request-body.ts";
import { authenticatedBody, requireReader } from "./triggers/webhook/auth.ts";
import { decodeParams } from "./triggers/webhook/body.ts";
import {
  invokeAnswer,
  invokeStart,
  invokeStream,
  requestedWait,
  wantsStream,
} from "./triggers/webhook/invoke.ts";
import { mountViewer } from "./viewer/routes.ts";

const bundle: Bundle = workflowBundle;

export const app = new Hono<{ Bindings: Env }>();

// Under `npm start`, while the workflows do not build, every request is answered at once: a
// browser gets a page with the errors, every other client the problem+json.
const broken = buildFailed(bundle);
if (broken) {
  app.use("*", async (c) => buildFailedAnswer(broken, c.req.raw));
}

app.get("/health", (c) => c.json({ status: "ok" }));

app.post("/invoke/:name", async (c) => {
  const { key, wf } = invocable(c.req.param("name"), "");
  const env = c.env as unknown as Record<string, unknown>;
  // The webhook trigger (src/triggers/webhook/invoke.ts) makes the start request; the run layer starts it.
  const started = { ...(await invokeStart(bundle, wf, c.req.raw, env)), carry: waitUntilOf(c) };
  if (wantsStream(c.req.raw)) {
    // The run as it goes (docs/http-api.md, "Streaming"): nothing waits for it before the stream opens.
    const result = await startRun(c.env, key, wf, { ...started, waitS: 0 });
    return (await invokeStream(c.env, result)) ?? invokeAnswer(wf, { ...started, waitS: 0 }, result, env);
  }
  return invokeAnswer(wf, started, await startRun(c.env, key, wf, started), env);
});

async function viewRun(c: { env: Env; req: { param(k: "id"): string; raw: Request } }) {
  const stub = runStub(c.env, c.req.param("id"));
  const view = stub ? await stub.view() : null;
  if (!stub || !view) throw new HttpProblem("run_not_found", "no run with this id");
  await requireReader(view.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  if (view.kept === false)
    throw new HttpProblem(
      "run_not_kept",
      "the run completed and its workflow keeps no record of completed runs (history: failures)",
    );
  return { stub, view };
}

app.get("/runs/:id", async (c) => c.json((await viewRun(c)).view.envelope));
app.get("/runs/:id/envelope", async (c) => c.json((await viewRun(c)).view.envelope));

app.get("/runs/:id/graph", async (c) => {
  const { view } = await viewRun(c);
  return c.json({ run_id: view.envelope.run_id, workflow: view.envelope.workflow, nodes: view.graph });
});

app.get("/runs/:id/events", async (c) => {
  const { stub } = await viewRun(c);
  return stub.fetch(c.req.raw);
});

/** The run's deliveries with their attempts (the viewer shows them). */
app.get("/runs/:id/deliveries", async (c) => {
  const { stub } = await viewRun(c);
  return c.json({ deliveries: (await stub.deliveries()) ?? [] });
});

app.post("/runs/:id/cancel", async (c) => {
  const { stub } = await viewRun(c);
  const result = await stub.cancel();
  if (result.outcome === "not_found") throw new HttpProblem("run_not_found", "no run with this id");
  if (result.outcome === "not_active")
    throw new HttpProblem("run_not_active", "the run has already finished");
  return c.json(result.envelope, 202);
});

// Compensation (docs/http-api.md): every failed compensation of a finished run once more.
app.post("/runs/:id/compensate", async (c) => {
  const { stub } = await viewRun(c);
  const result = await stub.compensate();
  if (result.outcome === "not_found") throw new HttpProblem("run_not_found", "no run with this id");
  if (result.outcome === "active")
    throw new HttpProblem("run_active", "the run has not finished: its compensations run once it has");
  if (result.outcome !== "retried")
    throw new HttpProblem("nothing_to_compensate", "no compensation of this run has failed");
  return c.json({ run_id: c.req.param("id"), retried: result.retried }, 202);
});

// ---- Re-runs (docs/http-api.md): the run's workflow's credentials; the run layer re-runs.

const deployed: Deployed = {
  bundle,
  lookup: (name: string) => {
    const key = Object.hasOwn(bundle.invocable, name) ? bundle.invocable[name] : undefined;
    const wf = key ? bundle.workflows[key] : undefined;
    return key && wf ? { key, wf } : null;
  },
};

app.post("/runs/rerun", async (c) => {
  const query = new URL(c.req.url).searchParams;
  const { wf } = invocable(workflowParam(query), "");
  await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  const q = await readBulkRerun(wf, query);
  const done = await rerunMany(c.env, deployed, q, new URL(c.req.url).origin);
  return c.json({ runs: done.runs, next_cursor: await bulkCursor(q, done.next) });
});

app.post("/runs/:id/rerun", async (c) => {
  const { stub } = await viewRun(c);
  const req = await readRerunRequest(c.req.raw);
  const waitS = requestedWait(c.req.raw) ?? 0;
  const oldRunId = c.req.param("id");
  const done = await rerun(c.env, deployed, oldRunId, stub, req, {
    waitS,
    origin: new URL(c.req.url).origin,
    once: false,
  });
  if (done === "already") throw new HttpProblem("internal_error", "the re-run could not start");
  const location = `/runs/${done.runId}`;
  const envelope = done.result.envelope;
  if (envelope && waitS > 0) {
    return c.json(envelope, 200, { location, "preference-applied": `wait=${waitS}` });
  }
  return c.json({ run_id: done.runId, status: "accepted", rerun_of: oldRunId }, 202, { location });
});

// ---- Signals (docs/http-api.md): the run's workflow's credentials.

app.post("/runs/:id/signals/:name", async (c) => {
  const { stub, view } = await viewRun(c);
  const name = c.req.param("name");
  const body = await readParams(c.req.raw);
  if (!SIGNAL_NAME.test(name))
    throw new HttpProblem("not_found", "a signal name is 1 to 64 of a-z, 0-9, _ and -");
  const result = await stub.signal(name, body);
  switch (result.outcome) {
    case "delivered":
      return c.json({ delivered: true, step: result.step });
    case "kept":
      return c.json({ delivered: false, kept: true }, 202);
    case "pending":
      throw new HttpProblem("signal_pending", `a \`${name}\` signal is already kept for this run`);
    case "invalid":
      throw new HttpProblem("invalid_signal", "the signal does not match the wait's schema", {
        errors: result.errors,
      });
    case "not_active":
      throw new HttpProblem("run_not_active", "the run has already finished");
    case "unknown":
      throw unknownSignal(name, deployedSignals(view.envelope.workflow));
    default:
      throw new HttpProblem("run_not_found", "no run with this id");
  }
});

// Keyed signals: every run of the workflow whose wait for `name` with that key waits now, through
// the key's own object (never one object per workflow).
app.post("/workflows/:workflow/signals/:name/:key", async (c) => {
  const { key, wf } = invocable(c.req.param("workflow"), "");
  const name = c.req.param("name");
  if (!SIGNAL_NAME.test(name))
    throw new HttpProblem("not_found", "a signal name is 1 to 64 of a-z, 0-9, _ and -");
  const body = await signalBody(wf, c.req.raw, c.env as unknown as Record<string, unknown>);
  const waits = signalsOf(key).has(name);
  const cancels = (wf.cancelOn ?? []).filter((x) => x.signal === name);
  if (!waits && cancels.length === 0)
    throw unknownSignal(name, [...signalsOf(key), ...(wf.cancelOn ?? []).map((x) => x.signal)]);
  const urlKey = c.req.param("key");
  // cancel_on first (docs/triggers.md): the runs of that key active now are canceled; a run that
  // also waits for the signal ends canceled rather than taking it.
  const keyObjects = new Set(cancels.map((x) => flowKeyName(wf.name, x.key ? urlKey : "")));
  const canceledRuns = (
    await Promise.all([...keyObjects].map((n) => flowKeyStub(c.env, residencyOf(wf), n).cancelFor(name)))
  )
    .flat()
    .sort();
  const canceled = cancels.length > 0 ? { canceled: canceledRuns.length, canceled_runs: canceledRuns } : {};
  if (!waits) return c.json({ delivered: 0, runs: [], ...canceled });
  const result = await signalKeyStub(c.env, residencyOf(wf), wf.name, name, urlKey).send(body, name, urlKey);
  if (result.outcome === "delivered")
    return c.json({ delivered: result.runs.length, runs: result.runs, ...canceled });
  if (canceledRuns.length > 0) return c.json({ delivered: 0, runs: [], ...canceled });
  if (result.outcome === "invalid") {
    throw new HttpProblem("invalid_signal", "the signal does not match the waiting runs' schema", {
      errors: result.errors,
    });
  }
  return c.json({ delivered: 0, kept: true, ...canceled }, 202);
});

// The protocols that start runs (docs/protocols.md): the OpenAI-compatible endpoint, the MCP server.
mountProtocolRoutes(app, deployed);

// A workflow's schedule entries, and what an operator asks of one (run now, pause, resume, backfill).
mountScheduleRoutes(app, (name) => invocable(name, ""));

// A workflow's scores over a window (docs/http-api.md, "Scores").
mountScoreRoutes(app, (name) => invocable(name, ""));

/** 404 `unknown_signal`: no wait declares the name (a typo is refused, never kept). */
function unknownSignal(name: string, known: Iterable<string>): HttpProblem {
  return new HttpProblem(
    "unknown_signal",
    `no wait of this workflow waits for a signal named "${name}"${didYouMean(name, known)}`,
  );
}

/** The signal names the deployed workflow called `name` declares (none when it is not deployed). */
function deployedSignals(name: string): Set<string> {
  const found = deployed.lookup(name);
  return found ? signalsOf(found.key) : new Set();
}

/** The signal names a deployed workflow's waits declare (its sub-workflows included), once per workflow. */
const declared = new Map<string, Set<string>>();
function signalsOf(key: string): Set<string> {
  let names = declared.get(key);
  if (!names) {
    names = declaredSignals(pinDefinition(bundle, key));
    declared.set(key, names);
  }
  return names;
}

/**
 * A keyed signal's body, from a sender the workflow trusts: the workflow's invoke credentials
 * or its sender's signature over the raw body (a payment provider's signed webhook), checked as
 * on an invoke; for a signature scheme, the workflow's reading credentials too.
 */
async function signalBody(wf: CompiledWorkflow, req: Request, env: Record<string, unknown>) {
  const copy = req.clone();
  try {
    return decodeParams(await authenticatedBody(wf.auth, req, env), req.headers.get("content-type"));
  } catch (e) {
    if (!(e instanceof HttpProblem && e.code === "unauthorized" && wf.auth && isSignature(wf.auth))) throw e;
    await requireReader(wf.auth, copy.headers, env);
    return readParams(copy);
  }
}

// ---- Approvals (docs/agents-and-tools.md): the run object owns them; the same credentials as the run's workflow.

app.get("/runs/:id/approvals", async (c) => {
  const { stub } = await viewRun(c);
  const approvals = await stub.approvals();
  if (!approvals) throw new HttpProblem("run_not_found", "no run with this id");
  return c.json({ approvals });
});

app.post("/runs/:id/approvals/:approval", async (c) => {
  const { stub } = await viewRun(c);
  const { decision, comment } = await readDecision(c.req.raw);
  return decided(await stub.decide({ id: c.req.param("approval") }, decision, comment));
});

// ktsu's form: POST /runs/{run_id}/steps/{step}/approval/decide decides the step's pending approval
// (`{step}` a slash path, its slashes as they are or percent-encoded).
app.post("/runs/:id/steps/*", async (c) => {
  const rest = c.req.path.slice(`/runs/${c.req.param("id")}/steps/`.length);
  const m = /^(.+)\/approval\/decide$/.exec(rest);
  if (!m?.[1]) throw new HttpProblem("not_found", "no such route");
  const { stub } = await viewRun(c);
  const { decision, comment } = await readDecision(c.req.raw);
  // A path that is not valid percent-encoding names no step (and must not end as a 500).
  let step: string;
  try {
    step = decodeURIComponent(m[1]);
  } catch {
    throw new HttpProblem("approval_not_found", "no such approval in this run");
  }
  return decided(await stub.decide({ step }, decision, comment));
});

function decided(result: Awaited<ReturnType<RunRpc["decide"]>>): Response {
  if (result.outcome === "not_found")
    throw new HttpProblem("approval_not_found", "no such approval in this run");
  if (result.outcome === "already_decided") {
    throw new HttpProblem("approval_already_decided", `the approval is already ${result.approval.status}`);
  }
  return Response.json(result.approval);
}

app.delete("/runs/:id", async (c) => {
  const { stub, view } = await viewRun(c);
  const e = view.envelope;
  if (e.status === "queued" || e.status === "pending" || e.status === "running") {
    throw new HttpProblem("run_active", "cancel the run before deleting it");
  }
  // The listing first (a tombstone): if deleting the run then fails, a retry finds it again,
  // whereas a listed run whose storage is gone could never be cleaned up.
  const { run_id, workflow, status, created_at, finished_at } = e;
  await forgetRun(c.env, { run_id, workflow, status, created_at, finished_at });
  const outcome = await stub.remove();
  if (outcome === "not_found") throw new HttpProblem("run_not_found", "no run with this id");
  if (outcome === "active") throw new HttpProblem("run_active", "cancel the run before deleting it");
  return c.body(null, 204);
});

/** A workflow's runs, newest first, for whoever holds that workflow's credentials. */
app.get("/runs", async (c) => {
  const query = new URL(c.req.url).searchParams;
  const { wf } = invocable(workflowParam(query), "");
  await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  return c.json(await runListPage(c.env, wf, query));
});

/** A workflow's deliveries (docs/http-api.md, "Deliveries"), for whoever holds its credentials. */
app.get("/deliveries", async (c) => {
  const query = new URL(c.req.url).searchParams;
  const { wf } = invocable(workflowParam(query), "");
  await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  return c.json(await deliveryListPage(c.env, wf, query));
});

app.post("/deliveries/recover", async (c) => {
  const query = new URL(c.req.url).searchParams;
  const { wf } = invocable(workflowParam(query), "");
  await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  const since = parseSince(single(query, "since"));
  return c.json({ recovered: await recoverDeliveries(c.env, wf, since) });
});

app.post("/deliveries/:id/retry", async (c) => {
  const id = c.req.param("id");
  const runId = deliveryRunId(id);
  const stub = runId ? runStub(c.env, runId) : null;
  const view = stub ? await stub.view() : null;
  if (!stub || !view) throw new HttpProblem("delivery_not_found", "no delivery with this id");
  await requireReader(view.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
  const delivery = await stub.retryDelivery(id);
  if (!delivery) throw new HttpProblem("delivery_not_found", "no delivery with this id");
  return c.json({ id: delivery.id, state: delivery.state }, 202);
});

// Local queues (docs/triggers.md, "Queues"): under `npm run start:queues` the producer Worker beside
// this one sends to them, reached through a binding that only that command gives (scripts/start-queues.ts).
app.all("/queues/*", (c) => {
  const producer = (c.env as unknown as { QUEUE_PRODUCER?: Fetcher }).QUEUE_PRODUCER;
  return producer ? producer.fetch(c.req.raw) : unmatched(app.routes, c.req.method, c.req.path);
});

mountViewer(app);
mountOpenApi(app);

// A known path with another method is 405 with Allow (OPTIONS: 204); any other path 404.
app.notFound((c) => unmatched(app.routes, c.req.method, c.req.path));

app.onError((err) => {
  if (err instanceof HttpProblem) return err.toResponse();
  if (err instanceof RunRefusal) return HttpProblem.from(err).toResponse();
  // Never echo internals: the message could hold anything.
  console.error("unhandled error", err instanceof Error ? err.name : typeof err);
  return new HttpProblem("internal_error", "the server failed to handle this request").toResponse();
});

/** The invocable workflow called `name`, or 404 workflow_not_found (`hint` ends the detail). */
function invocable(name: string, hint: string): { key: string; wf: CompiledWorkflow } {
  const found = deployed.lookup(name);
  if (!found)
    throw new HttpProblem(
      "workflow_not_found",
      `no workflow named "${name}"${hint || didYouMean(name, Object.keys(bundle.invocable))}`,
    );
  return found;
}
