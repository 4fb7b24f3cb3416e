/**
 * The five invariants of a chaos run (docs/operations.md, "Chaos"), each checked from what the
 * load recorded, what the receivers took and what the Worker answers after the load, as one row
 * of the table the run prints: what was checked, what broke it (with run ids), and notes.
 */
import { type Invoked, type Json, KEYED, persist, type Target } from "./load.ts";
import type { ChaosServers } from "./servers.ts";

export interface Row {
  invariant: string;
  checked: number;
  violations: string[];
  notes: string;
}

export interface Evidence {
  invoked: Invoked[];
  /** When each SIGKILL struck (epoch ms). */
  kills: number[];
  servers: ChaosServers;
  /** Every log line of every incarnation of the Worker. */
  logs: string[];
  secrets: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TERMINAL = ["complete", "failed", "canceled"];
/** The longest a step of the chaos workflows may take beyond the deadline (a webhook attempt, a model call). */
const STEP_TIMEOUT_MS = 30_000;
/** A carried entry (a run that ended before its answer) is at risk from a kill this soon after the answer. */
const CARRY_WINDOW_MS = 12_000;
/** What the read of a run not found answered (its status and code), for the violation's text. */
const notFound = new Map<string, string>();

/** The final envelope of every answered run (null: never found), read until terminal or past its deadline + 60 s. */
export async function finalEnvelopes(target: Target, ev: Evidence): Promise<Map<string, Json | null>> {
  const out = new Map<string, Json | null>();
  const ids = [...new Set(ev.invoked.flatMap((r) => (r.runId ? [r.runId] : [])))];
  const answers = new Map(ev.invoked.map((r) => [r.runId, r]));
  await inPool(ids, 32, async (id) => {
    const errors: string[] = [];
    for (;;) {
      const got = await persist(target, `/runs/${id}`, {}, (s) => s < 500, errors, 60_000);
      if (got.status === 410) return void out.set(id, { status: "complete", express: true });
      // An express run that completed before its answer keeps nothing: once its object has
      // left memory its id reads 404 (docs/operations.md, "Express runs"); its answer was its end.
      const answer = answers.get(id);
      if (got.status === 404 && answer?.kind === "express" && answer.envelope?.status === "complete")
        return void out.set(id, { status: "complete", express: true, evicted: true });
      if (got.status !== 200) {
        notFound.set(id, `${got.status} ${got.body?.code ?? ""}`.trim());
        return void out.set(id, null);
      }
      const e = got.body;
      const giveUp = Date.parse(e.deadline) + 60_000;
      // Ended, and what it undoes undone (a compensation runs after the run has ended).
      const settled = TERMINAL.includes(e.status) && e.compensation?.status !== "running";
      if (settled || Date.now() > giveUp) return void out.set(id, e);
      await sleep(500);
    }
  });
  return out;
}

/** `each` over `items`, at most `width` at a time (a long run reads thousands of runs). */
async function inPool<T>(items: T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await each(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
}

/** Every record path of an envelope's steps, with its record (nested workflow steps and fan-out items). */
function records(steps: Json[], prefix = ""): Array<[string, Json]> {
  return (steps ?? []).flatMap((s: Json) => [
    [`${prefix}${s.id}`, s] as [string, Json],
    ...records(s.steps ?? [], `${prefix}${s.id}/`),
  ]);
}

/** The webhook steps of each chaos workflow (record paths; `post/*`: a fan-out's items). */
const WEBHOOKS: Record<string, RegExp> = {
  "chaos-webhook": /^call$/,
  "chaos-fanout": /^post\/\d+$/,
  "chaos-sub": /^child\/call$/,
  "chaos-saga": /^reserve$/,
  "chaos-concurrency": /^call$/,
};

export async function existence(
  target: Target,
  ev: Evidence,
  finals: Map<string, Json | null>,
): Promise<Row> {
  const violations: string[] = [];
  // A queue message makes at most one run, which ends (one the killed broker held was never
  // acked); a mail the Worker took makes exactly one. Their runs: the listing's entries of their
  // key, and the runs that told the receiver their key (an entry a kill took is not the only trace).
  const sent = ev.invoked.filter((r) => KEYED.includes(r.kind) && (r.status === 202 || r.status === 200));
  const byKey = new Map<string, Set<string>>();
  const add = (key: string, runId: string) => byKey.set(key, (byKey.get(key) ?? new Set()).add(runId));
  for (const name of new Set(sent.map((r) => r.workflow)))
    for (const entry of await listAll(target, name)) add(entry.search?.key, entry.run_id);
  for (const h of ev.servers.received.filter((x) => /^\/hook\/(queued|mailed)/.test(x.path) && x.key)) {
    const key = (JSON.parse(h.text || "{}") as Json).key;
    if (typeof key === "string") add(key, (h.key as string).split(":")[0] as string);
  }
  let queuedRuns = 0;
  let mailRuns = 0;
  for (const r of sent) {
    const runs = [...(byKey.get(r.params.key) ?? [])];
    if (runs.length > 1) violations.push(`${r.params.key}: ${runs.length} runs of one ${r.kind}`);
    if (r.kind === "email" && runs.length === 0) violations.push(`${r.params.key}: a mail taken, no run`);
    for (const runId of runs) {
      if (r.kind === "email") mailRuns++;
      else queuedRuns++;
      const e = (await finalEnvelopes(target, { ...ev, invoked: [{ ...r, runId }] })).get(runId);
      if (!e || !TERMINAL.includes(e.status)) violations.push(`${runId}: a ${r.kind}'s run did not end`);
    }
  }
  for (const r of ev.invoked.filter((x) => KEYED.includes(x.kind) && x.status !== 202 && x.status !== 200))
    violations.push(`${r.key}: a ${r.kind} never taken (answered ${r.status})`);
  for (const r of ev.invoked) {
    if (KEYED.includes(r.kind)) continue;
    if (r.status === 0) violations.push(`${r.key}: never answered`);
    else if (r.status >= 400) violations.push(`${r.key}: answered ${r.status}`);
    else if (!r.runId) violations.push(`${r.key}: answered without a run id`);
    else {
      const e = finals.get(r.runId);
      if (!e)
        violations.push(
          `${r.runId} (${r.kind}): answered ${r.status}, then read as ${notFound.get(r.runId) ?? "nothing"}`,
        );
      else if (!TERMINAL.includes(e.status))
        violations.push(`${r.runId}: still ${e.status} past its deadline + 60 s`);
      else if (r.signal && (r.signal.status === 200 || r.signal.status === 202)) {
        const go = records(e.steps).find(([p]) => p === "go")?.[1];
        if (JSON.stringify(go?.output) !== JSON.stringify(r.signal.payload))
          violations.push(
            `${r.runId}: its signal was answered ${r.signal.status}, its wait holds ${JSON.stringify(go?.output)}`,
          );
      }
    }
  }
  const signals = ev.invoked.filter((r) => r.signal).length;
  const evicted = [...finals.values()].filter((e) => e?.evicted).length;
  return {
    invariant: "1. every answered run exists and ends; every signal answered 2xx was taken",
    checked: ev.invoked.length,
    violations,
    notes: `${signals} signals; ${evicted} completed express runs read 404 once their object left memory (as documented); ${sent.filter((r) => r.kind === "queue").length} queue messages sent, ${queuedRuns} runs (the rest died with the killed broker before any run); ${mailRuns} mails taken, each one run`,
  };
}

export function sideEffects(ev: Evidence, finals: Map<string, Json | null>): Row {
  const violations: string[] = [];
  const hooks = ev.servers.received.filter((r) => r.path.startsWith("/hook/"));
  const byKey = new Map<string, Set<string>>();
  for (const r of hooks) {
    if (!r.key) {
      violations.push(`a request to ${r.path} without an idempotency key`);
      continue;
    }
    byKey.set(r.key, (byKey.get(r.key) ?? new Set()).add(r.body));
  }
  for (const [key, bodies] of byKey)
    if (bodies.size > 1) violations.push(`${key}: ${bodies.size} different bodies`);
  let completed = 0;
  let compensated = 0;
  for (const r of ev.invoked) {
    const e = r.runId ? finals.get(r.runId) : null;
    const pattern = WEBHOOKS[r.workflow];
    if (!e?.steps || !pattern || !r.runId) continue;
    for (const [path, rec] of records(e.steps)) {
      if (!pattern.test(path) || rec.status !== "complete") continue;
      completed++;
      if (!byKey.has(`${r.runId}:${path}`)) violations.push(`${r.runId}: ${path} completed, never received`);
    }
    if (r.workflow === "chaos-saga" && e.status === "failed") {
      const reserved = records(e.steps).find(([p]) => p === "reserve")?.[1]?.status === "complete";
      if (!reserved) continue;
      compensated++;
      const releases = new Set(
        hooks
          .filter((h) => h.path.startsWith("/hook/release") && h.key?.startsWith(r.runId as string))
          .map((h) => h.key),
      );
      if (releases.size === 0) violations.push(`${r.runId}: failed with a reservation, never released`);
      if (releases.size > 1) violations.push(`${r.runId}: released under ${releases.size} keys`);
      if (e.compensation?.status !== "complete")
        violations.push(`${r.runId}: compensation ${e.compensation?.status ?? "missing"}`);
    }
  }
  return {
    invariant:
      "2. side effects carry their run's key, one body per key; completed steps received; compensations once",
    checked: hooks.length,
    violations,
    notes: `${byKey.size} keys, ${completed} completed webhook steps, ${compensated} compensated runs`,
  };
}

/** Every entry of workflow `name` in the listing. */
async function listAll(target: Target, name: string): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | null = null;
  const errors: string[] = [];
  do {
    const q: string = `/runs?workflow=${name}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const got = await persist(target, q, {}, (s) => s < 500, errors, 30_000);
    out.push(...(got.body?.runs ?? []));
    cursor = got.body?.next_cursor ?? null;
  } while (cursor);
  return out;
}

export async function listing(target: Target, ev: Evidence, finals: Map<string, Json | null>): Promise<Row> {
  const expected = new Map<string, Invoked>();
  for (const r of ev.invoked) if (r.runId && !KEYED.includes(r.kind)) expected.set(r.runId, r);
  const names = [...new Set(ev.invoked.map((r) => r.workflow))];
  let listed = new Map<string, Json[]>();
  const until = Date.now() + 10_000;
  for (;;) {
    listed = new Map();
    for (const name of names)
      for (const entry of await listAll(target, name))
        listed.set(entry.run_id, [...(listed.get(entry.run_id) ?? []), entry]);
    const missing = [...expected.keys()].filter(
      (id) => finalStatus(finals.get(id)) !== listed.get(id)?.[0]?.status,
    );
    if (missing.length === 0 || Date.now() > until) break;
    await sleep(1_000);
  }
  const violations: string[] = [];
  let lostToKills = 0;
  for (const [id, r] of expected) {
    const entries = listed.get(id) ?? [];
    const status = finalStatus(finals.get(id));
    if (entries.length > 1) violations.push(`${id}: listed ${entries.length} times`);
    else if (entries.length === 0) {
      // A run that ended before its answer: its Worker carried its entry, which a kill in the
      // seconds after the answer may take with it (docs/operations.md, "Chaos").
      // Carried: some answer of it (its own invoke's, not one that joined it) had it ended.
      const ending = ev.invoked.find(
        (x) => x.runId === id && x.status === 200 && TERMINAL.includes(x.envelope?.status),
      );
      const carried = ending !== undefined;
      const at = ending?.answeredAt ?? r.answeredAt ?? 0;
      if (carried && ev.kills.some((k) => k >= at - 1_000 && k <= at + CARRY_WINDOW_MS)) lostToKills++;
      else {
        const near = ev.kills.map((k) => k - at).sort((a, b) => Math.abs(a) - Math.abs(b))[0];
        const e = finals.get(id);
        const times = e
          ? `created ${e.created_at}, started ${e.started_at}, finished ${e.finished_at}, coalesced ${e.coalesced}`
          : "";
        violations.push(
          `${id} (${r.kind}, answered ${r.status}${r.envelope?.status ? ` ${r.envelope.status}` : ""} at ${new Date(at).toISOString()}, the nearest kill ${near ?? "none"} ms from its answer, now ${status}; ${times}): not listed`,
        );
      }
    } else if (entries[0].status !== status)
      violations.push(`${id}: listed ${entries[0].status}, is ${status}`);
  }
  const queued = new Set(ev.invoked.filter((r) => KEYED.includes(r.kind)).map((r) => r.workflow));
  for (const [id, entries] of listed) {
    if (expected.has(id) || queued.has(entries[0]?.workflow)) continue;
    violations.push(`${id}: listed, never answered`);
  }
  return {
    invariant: "3. the listing shows every answered run once, with its final status, within 10 s",
    checked: expected.size,
    violations,
    notes: `${lostToKills} carried entries lost to a kill within ${CARRY_WINDOW_MS / 1000} s of their answer`,
  };
}

const finalStatus = (e: Json | null | undefined) => (e?.express ? "complete" : e?.status);

export async function limitsAndSecrets(
  target: Target,
  ev: Evidence,
  finals: Map<string, Json | null>,
): Promise<Row> {
  const violations: string[] = [];
  let checked = 0;
  for (const [id, e] of finals) {
    if (!e || e.express || !e.finished_at) continue;
    checked++;
    if (Date.parse(e.finished_at) > Date.parse(e.deadline) + STEP_TIMEOUT_MS)
      violations.push(
        `${id}: ended ${Date.parse(e.finished_at) - Date.parse(e.deadline)} ms past its deadline`,
      );
    if (e.budget_usd !== null && e.totals.cost_usd > e.budget_usd)
      violations.push(`${id}: spent ${e.totals.cost_usd}`);
  }
  // Events of a sample of runs (the ones with a secret header and a model key on their way).
  const errors: string[] = [];
  const events: string[] = [];
  for (const r of ev.invoked.filter((x) => x.runId && ["webhook", "stream"].includes(x.kind)).slice(0, 40)) {
    const got = await persist(target, `/runs/${r.runId}/events`, {}, (s) => s < 500, errors, 30_000);
    events.push(typeof got.body === "string" ? got.body : JSON.stringify(got.body));
  }
  const places: Array<[string, string[]]> = [
    ["envelopes", [...finals.values()].map((e) => JSON.stringify(e))],
    ["events", events],
    ["log lines", ev.logs],
    ["deliveries", ev.servers.received.filter((r) => r.path.startsWith("/notify")).map((r) => r.text)],
    ["spans", ev.servers.spans],
  ];
  for (const [where, texts] of places)
    for (const s of ev.secrets)
      if (texts.some((t) => t.includes(s))) violations.push(`a secret in the ${where}`);
  return {
    invariant: "4. no run past its budget or its deadline (+ a step's timeout); no secret in what leaves",
    checked,
    violations,
    notes: places.map(([w, t]) => `${t.length} ${w}`).join(", "),
  };
}

export async function deliveries(
  target: Target,
  ev: Evidence,
  finals: Map<string, Json | null>,
): Promise<Row> {
  const violations: string[] = [];
  const notifying = ev.invoked.filter(
    (r) => r.kind === "notify" && r.runId && finals.get(r.runId)?.status === "complete",
  );
  const received = ev.servers.received.filter((r) => r.path.startsWith("/notify"));
  let delivered = 0;
  let failed = 0;
  for (const r of notifying) {
    const errors: string[] = [];
    let states: string[] = [];
    const until = Date.now() + 60_000;
    for (;;) {
      const got = await persist(target, `/runs/${r.runId}`, {}, (s) => s < 500, errors, 30_000);
      states = (got.body?.deliveries ?? []).map((d: Json) => d.state);
      if (states.length > 0 && states.every((s) => s !== "pending")) break;
      if (Date.now() > until) break;
      await sleep(500);
    }
    if (states.length === 0) violations.push(`${r.runId}: no delivery`);
    for (const s of states) {
      if (s === "pending") violations.push(`${r.runId}: a delivery still pending`);
      if (s === "delivered") {
        delivered++;
        if (!received.some((x) => x.status === 200 && x.text.includes(r.runId as string)))
          violations.push(`${r.runId}: delivered, never received`);
      }
      if (s === "failed") failed++;
    }
  }
  return {
    invariant: "5. every notification due was delivered or is on the failed list",
    checked: notifying.length,
    violations,
    notes: `${delivered} delivered, ${failed} failed`,
  };
}
