/**
 * The chaos run's load (docs/operations.md, "Chaos"): runs of every kind the chaos workflows
 * cover, started at a steady pace while the Worker is killed and restarted, each driven as a
 * client would: an invoke with an `Idempotency-Key` sent again until it is answered (a kill may
 * drop it), a signal sent once its wait waits, a queue message sent until the queue takes it.
 * What each got back is recorded for the invariants (invariants.ts).
 */
import type { Prng } from "./prng.ts";

// biome-ignore lint/suspicious/noExplicitAny: envelopes are read field by field
export type Json = any;

export type Kind =
  | "transform"
  | "webhook"
  | "wait"
  | "fanout"
  | "sub"
  | "saga"
  | "stream"
  | "concurrency"
  | "debounce"
  | "batch"
  | "queue"
  | "express"
  | "notify"
  | "chat"
  | "a2a"
  | "email";

export const KINDS: ReadonlyArray<readonly [Kind, number]> = [
  ["transform", 14],
  ["webhook", 14],
  ["wait", 8],
  ["fanout", 6],
  ["sub", 6],
  ["saga", 6],
  ["stream", 6],
  ["concurrency", 8],
  ["debounce", 6],
  ["batch", 6],
  ["queue", 8],
  ["express", 10],
  ["notify", 6],
  ["chat", 6],
  ["a2a", 6],
  ["email", 6],
];

/** Kinds whose start answers no run id: their runs are found by their key (the listing's search key, the receiver). */
export const KEYED: ReadonlyArray<Kind> = ["queue", "email"];

/** One run started by the load: what was sent, and what came back. */
export interface Invoked {
  i: number;
  kind: Kind;
  workflow: string;
  key: string;
  params: Json;
  /** The answer's status (0: never answered; a queue message: 202 once the queue took it; a mail: 200 once the Worker took it). */
  status: number;
  runId: string | null;
  /** When the answer came (epoch ms). */
  answeredAt: number | null;
  /** The envelope of a 200 answer. */
  envelope: Json | null;
  /** The signal sent to a wait, and its answer. */
  signal?: { status: number; body: Json; payload: Json };
  /** Answers of our Worker with a 5xx on the way (not a kill's dropped connection). */
  errors: string[];
}

export interface Target {
  /** The Worker's origin now (it changes with each restart). */
  url(): string;
  /** Sends `body` to the chaos queue through the Worker's queue binding. */
  sendToQueue(body: Json): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A request sent again after a network failure (a kill) until `done` says its answer counts. */
export async function persist(
  target: Target,
  path: string,
  init: RequestInit,
  done: (status: number) => boolean,
  errors: string[],
  giveUpMs = 180_000,
  onAnswer?: (res: Response) => void,
): Promise<{ status: number; body: Json; at: number }> {
  const until = Date.now() + giveUpMs;
  for (;;) {
    try {
      const res = await fetch(`${target.url()}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
      onAnswer?.(res);
      const text = await res.text();
      let body: Json = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      if (res.status >= 500) errors.push(`${res.status} ${path} ${body?.code ?? String(text).slice(0, 80)}`);
      if (done(res.status)) return { status: res.status, body, at: Date.now() };
    } catch {
      // The Worker is being killed or restarted: the request is sent again.
    }
    if (Date.now() > until) return { status: 0, body: null, at: Date.now() };
    await sleep(150);
  }
}

/** Params for one run of `kind`. */
function paramsOf(kind: Kind, i: number, prng: Prng, seed: number): Json {
  const n = i;
  if (kind === "fanout") return { items: Array.from({ length: prng.int(2, 5) }, (_, k) => `${i}-${k}`) };
  if (kind === "concurrency") return { n, group: `g${prng.int(0, 3)}` };
  if (kind === "debounce" || kind === "batch") return { n, group: `${kind}-${seed}-${Math.floor(i / 7)}` };
  if (kind === "queue") return { n, key: `q-${seed}-${i}` };
  if (kind === "email") return { n, key: `m-${seed}-${i}` };
  return { n };
}

/** Starts run `i` of `kind` and drives it (its signal) as a client would. */
export async function startOne(
  target: Target,
  kind: Kind,
  i: number,
  prng: Prng,
  seed: number,
): Promise<Invoked> {
  const workflow = `chaos-${kind}`;
  const key = `chaos-${seed}-${i}`;
  const params = paramsOf(kind, i, prng, seed);
  const rec: Invoked = {
    i,
    kind,
    workflow,
    key,
    params,
    status: 0,
    runId: null,
    answeredAt: null,
    envelope: null,
    errors: [],
  };
  if (kind === "queue") {
    const until = Date.now() + 120_000;
    while (Date.now() < until) {
      try {
        await target.sendToQueue(params);
        rec.status = 202;
        rec.answeredAt = Date.now();
        return rec;
      } catch {
        await sleep(200);
      }
    }
    return rec;
  }
  if (kind === "email") {
    await mail(target, rec);
    return rec;
  }
  if (kind === "chat") {
    await chat(target, rec);
    return rec;
  }
  if (kind === "a2a") {
    await a2a(target, rec, prng);
    return rec;
  }
  const wait = prng.next() < 0.6 ? 10 : 0;
  const answer = await persist(
    target,
    `/invoke/${workflow}`,
    {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": key,
        ...(wait > 0 ? { prefer: `wait=${wait}` } : {}),
      },
      body: JSON.stringify(params),
    },
    (s) => s === 200 || s === 202 || (s >= 400 && s < 500),
    rec.errors,
  );
  rec.status = answer.status;
  rec.answeredAt = answer.status ? answer.at : null;
  rec.runId = answer.body?.run_id ?? null;
  if (answer.status === 200 && answer.body?.status) rec.envelope = answer.body;
  if (kind === "wait" && rec.runId && (answer.status === 200 || answer.status === 202))
    await signal(target, rec);
  return rec;
}

/** A mail to chaos@, sent again after a kill until the Worker takes it (its Message-ID makes it one run). */
async function mail(target: Target, rec: Invoked): Promise<void> {
  const key = rec.params.key as string;
  const raw = [
    "From: Chaos <load@chaos.example>",
    "To: chaos@chaos.example",
    `Subject: ${key}`,
    `Message-ID: <${key}@chaos.example>`,
    "",
    `Run ${rec.i}.`,
    "",
  ].join("\r\n");
  const path = "/cdn-cgi/local/email?from=load@chaos.example&to=chaos@chaos.example";
  const got = await persist(target, path, { method: "POST", body: raw }, (s) => s < 500, rec.errors);
  rec.status = got.status;
  rec.answeredAt = got.status ? got.at : null;
}

/** A chat completion with an Idempotency-Key, sent again after a kill (docs/protocols.md). */
async function chat(target: Target, rec: Invoked): Promise<void> {
  const got = await persistRaw(
    target,
    "/v1/chat/completions",
    {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": rec.key },
      body: JSON.stringify({ model: rec.workflow, messages: [{ role: "user", content: String(rec.i) }] }),
    },
    rec.errors,
  );
  rec.status = got.status;
  rec.answeredAt = got.status ? got.at : null;
  rec.runId = got.runId;
  // The reply is the run's end: its answer carries the listing entry as an invoke's 200 does.
  if (got.status === 200)
    rec.envelope = { status: "complete", reply: got.body?.choices?.[0]?.message?.content };
}

/** An A2A task that asks for input, answered by a follow-up message naming it (docs/a2a.md). */
async function a2a(target: Target, rec: Invoked, prng: Prng): Promise<void> {
  const rpc = (method: string, params: Json) => ({
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const message = { messageId: rec.key, role: "ROLE_USER", parts: [{ data: rec.params }] };
  const configuration = prng.next() < 0.5 ? { returnImmediately: true } : undefined;
  const path = `/a2a/${rec.workflow}`;
  const got = await persist(
    target,
    path,
    rpc("SendMessage", { message, configuration }),
    (s) => s < 500,
    rec.errors,
  );
  rec.status = got.status;
  rec.answeredAt = got.status ? got.at : null;
  rec.runId = got.body?.result?.task?.id ?? null;
  if (!rec.runId) return;
  await signal(target, rec, async (payload) => {
    const reply = {
      messageId: `${rec.key}-go`,
      role: "ROLE_USER",
      taskId: rec.runId,
      parts: [{ data: payload }],
    };
    const sent = await persist(
      target,
      path,
      rpc("SendMessage", { message: reply }),
      (s) => s < 500,
      rec.errors,
    );
    // A JSON-RPC error is not a taken signal (one a kill answered late may be taken already).
    return { status: sent.body?.result ? 200 : (sent.body?.error?.code ?? sent.status), body: sent.body };
  });
}

/** `persist` for an answer read with its `x-run-id` header. */
async function persistRaw(
  target: Target,
  path: string,
  init: RequestInit,
  errors: string[],
): Promise<{ status: number; body: Json; at: number; runId: string | null }> {
  let runId: string | null = null;
  const got = await persist(
    target,
    path,
    init,
    (s) => s === 200 || (s >= 400 && s < 500),
    errors,
    180_000,
    (res) => {
      runId = res.headers.get("x-run-id");
    },
  );
  return { ...got, runId };
}

/** A wait's run gets its signal once its wait waits (or says it no longer waits). */
async function signal(
  target: Target,
  rec: Invoked,
  send: (payload: Json) => Promise<{ status: number; body: Json }> = async (payload) =>
    persist(
      target,
      `/runs/${rec.runId}/signals/go`,
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) },
      (s) => s < 500,
      rec.errors,
    ),
): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const view = await persist(target, `/runs/${rec.runId}`, {}, (s) => s < 500, rec.errors, 60_000);
    const step = view.body?.steps?.find((s: Json) => s.id === "go");
    if (step?.status === "waiting") break;
    if (["complete", "failed", "canceled"].includes(view.body?.status)) return;
    await sleep(300);
  }
  const payload = { n: rec.i };
  const sent = await send(payload);
  rec.signal = { status: sent.status, body: sent.body, payload };
}
