/**
 * The run listing, `GET /runs?workflow=NAME` (docs/http-api.md), end to end through the Worker:
 * every run listed once while paging (also after hundreds of concurrent invokes), newest first,
 * the status filter, statuses that follow the runs, the query checks (400 `invalid_query`, also
 * for a tampered cursor), the workflow's credentials, DELETE, retention, and the scale rule: an
 * invoke contacts no Durable Object other than its run's own; the run writes its listing entry
 * itself, and its alarm retries until the listing has it (also after an eviction).
 */

import {
  createExecutionContext,
  evictDurableObject,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import { app } from "../../../src/app.ts";
import type { Bundle } from "../../../src/bundle.ts";
import { recordRun } from "../../../src/run/listing/listing.ts";
import { BUCKET_MS, placeRun, SHARDS_PER_BUCKET, shardOf } from "../../../src/run/listing/listing-layout.ts";
import type { RunObject } from "../../../src/run/object/run-object.ts";
import { poll } from "../../support/poll.ts";
import { call, invoke, run, TOKEN, waitForRun } from "../../worker/harness.ts";
import { shardHolds as holds, shardStubOf as shardStub } from "../../worker/listing-shard.ts";

interface Listed {
  run_id: string;
  workflow: string;
  status: string;
  created_at: string;
  finished_at: string | null;
}
interface ListBody {
  runs: Listed[];
  next_cursor: string | null;
}

const RETENTION_MS = 7 * 24 * 3600 * 1000;

async function list(query: string, headers: Record<string, string> = {}): Promise<ListBody> {
  const res = await call(`/runs?${query}`, { headers });
  if (res.status !== 200) throw new Error(`GET /runs?${query}: ${res.status} ${await res.text()}`);
  return (await res.json()) as ListBody;
}

/** Every page of a listing, following next_cursor to the end. */
async function listAll(query: string, limit = 100): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const page: ListBody = await list(
      `${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    out.push(...page.runs);
    cursor = page.next_cursor;
    if (!cursor) return out;
  }
  throw new Error("the listing never ended");
}

async function start(name: string, body: unknown, headers: Record<string, string> = {}): Promise<string> {
  const res = await invoke(name, body, { headers });
  expect(res.status).toBe(202);
  return ((await res.json()) as { run_id: string }).run_id;
}

/** Polls the whole listing until `done` holds (the listing may lag a run by up to 10 s). */
function listingUntil(
  query: string,
  done: (runs: Listed[]) => boolean,
  timeoutMs = 10_000,
): Promise<Listed[]> {
  return poll(`the listing of ${query}`, () => listAll(query), done, { timeoutMs, intervalMs: 100 });
}

function statusOf(runs: Listed[], runId: string): string | undefined {
  return runs.find((r) => r.run_id === runId)?.status;
}

/**
 * Starts listing-quick in the object `id`, which reaches the listing through `index`. `vars`: Worker
 * vars for this run only (its entry rides with other runs' unless LISTING_RIDE_MS says `off`).
 */
async function startQuickIn(
  id: DurableObjectId,
  index: Env["RUN_INDEX"],
  n: number,
  vars: Record<string, string> = { LISTING_RIDE_MS: "off" },
): Promise<string> {
  const bundle = workflowBundle as Bundle;
  const started = await runInDurableObject(env.RUNS.get(id), async (instance: RunObject) => {
    (instance as unknown as { env: Env }).env = { ...env, ...vars, RUN_INDEX: index };
    return instance.start({
      workflowKey: bundle.invocable["listing-quick"] as string,
      params: { n },
      request: { headers: {} },
      bodyHash: null,
      idempotencyKey: null,
      waitMs: 10_000,
    });
  });
  if (started.outcome !== "started") throw new Error(`a new run starts, not ${started.outcome}`);
  expect(started.envelope?.status).toBe("complete");
  return started.runId;
}

/** A RUN_INDEX namespace that counts the writes sent to shards (each looks its shard up once). */
function countingIndex(): {
  ns: Env["RUN_INDEX"];
  sent: () => number;
  /** Writes sent to shard number `shard` (of any hour). */
  sentTo: (shard: number) => number;
  /** When each write was sent (epoch ms), in order. */
  sentAt: () => number[];
} {
  const names: string[] = [];
  const times: number[] = [];
  const ns = {
    idFromName: (name: string) => {
      if (name.includes("\n")) {
        names.push(name);
        times.push(Date.now());
      }
      return env.RUN_INDEX.idFromName(name);
    },
    get: (id: DurableObjectId) => env.RUN_INDEX.get(id),
  } as unknown as Env["RUN_INDEX"];
  const sentTo = (shard: number) => names.filter((n) => n.endsWith(`\n${shard}`)).length;
  return { ns, sent: () => names.length, sentTo, sentAt: () => [...times] };
}

/** `n` new run objects whose entries all go to one shard. */
function idsOnOneShard(n: number, shard = shardOf(env.RUNS.newUniqueId().toString())): DurableObjectId[] {
  const ids: DurableObjectId[] = [];
  while (ids.length < n) {
    const id = env.RUNS.newUniqueId();
    if (shardOf(id.toString()) === shard) ids.push(id);
  }
  return ids;
}

function runStub(runId: string): DurableObjectStub {
  return env.RUNS.get(env.RUNS.idFromString(runId));
}

/** The listing shard a run of `workflow` (default listing-quick) started now goes to. */
function shardStubOf(runId: string, workflow = "listing-quick"): DurableObjectStub {
  return shardStub(runId, workflow);
}

/** Where the shard holds the run's entry (buffered or written). */
function shardHolds(runId: string, workflow = "listing-quick") {
  return holds(runId, workflow);
}

/** Gives the shard of `id`'s run a flush window of `ms` (at most the deployed 8 s; until it restarts). */
async function slowShard(stub: DurableObjectStub, ms: number): Promise<void> {
  await runInDurableObject(stub, (instance) => {
    const shard = (instance as unknown as { shard: { env: Env } }).shard;
    shard.env = { ...shard.env, LISTING_FLUSH_MS: String(ms) } as Env;
  });
}

describe("the invoke path", () => {
  /** A namespace that records every call made on the stubs it hands out. */
  function counting(ns: DurableObjectNamespace, label: string, calls: string[]): DurableObjectNamespace {
    return new Proxy(ns, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        if (prop !== "get" && prop !== "getByName") return value.bind(target);
        return (...args: unknown[]) => {
          calls.push(`${label}.${String(prop)}`);
          const stub = Reflect.apply(value, target, args) as object;
          return new Proxy(stub, {
            get(s, p) {
              const m = Reflect.get(s, p) as unknown;
              if (typeof m !== "function") return m;
              return (...a: unknown[]) => {
                calls.push(`${label} stub.${String(p)}`);
                // Reflect.apply: `m.apply` would be read as an RPC method named "apply".
                return Reflect.apply(m, s, a);
              };
            },
          });
        };
      },
    });
  }

  async function invokeCounting(
    headers: Record<string, string>,
  ): Promise<{ status: number; calls: string[] }> {
    const calls: string[] = [];
    const wrapped = {
      ...env,
      RUNS: counting(env.RUNS, "RUNS", calls),
      RUN_INDEX: counting(env.RUN_INDEX, "RUN_INDEX", calls),
    };
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request("http://workflow.test/invoke/listing-quick", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ n: 1 }),
      }),
      wrapped,
      ctx,
    );
    await res.arrayBuffer();
    // Whatever the request left running after its answer (waitUntil) counts too.
    await waitOnExecutionContext(ctx);
    return { status: res.status, calls };
  }

  it("makes one Durable Object request before the answer, the run's own, then carries its entry to its shard (sync invoke)", async () => {
    const { status, calls } = await invokeCounting({ prefer: "wait=10" });
    expect(status).toBe(200);
    // The run ended before its answer: the Worker sends its entry (its object arms no guard).
    expect(calls).toEqual(["RUNS.get", "RUNS stub.start", "RUN_INDEX.get", "RUN_INDEX stub.recordWritten"]);
  });

  it("makes exactly one Durable Object request: the run's own (async invoke)", async () => {
    const { status, calls } = await invokeCounting({});
    expect(status).toBe(202);
    expect(calls).toEqual(["RUNS.get", "RUNS stub.start"]);
  });

  it("carries a busy Worker's entries to their shard together: fewer shard writes than runs, each run listed once", async () => {
    // Idempotency keys whose runs all go to one shard (a run's id is named by workflow and key).
    const keys: string[] = [];
    const shard = shardOf(env.RUNS.idFromName(`listing-quick\nride-${crypto.randomUUID()}`).toString());
    while (keys.length < 30) {
      const key = `ride-${crypto.randomUUID()}`;
      if (shardOf(env.RUNS.idFromName(`listing-quick\n${key}`).toString()) === shard) keys.push(key);
    }
    const calls: string[] = [];
    const wrapped = {
      ...env,
      LISTING_RIDE_MS: "250",
      RUN_INDEX: counting(env.RUN_INDEX, "RUN_INDEX", calls),
    };
    const ctxs = keys.map(() => createExecutionContext());
    const runIds = await Promise.all(
      keys.map(async (key, n) => {
        const res = await app.fetch(
          new Request("http://workflow.test/invoke/listing-quick", {
            method: "POST",
            headers: { "content-type": "application/json", prefer: "wait=10", "idempotency-key": key },
            body: JSON.stringify({ n }),
          }),
          wrapped,
          ctxs[n] as ExecutionContext,
        );
        expect(res.status).toBe(200);
        return ((await res.json()) as { run_id: string }).run_id;
      }),
    );
    await Promise.all(ctxs.map((ctx) => waitOnExecutionContext(ctx)));
    // The first ten of a burst write on their own (the isolate is not busy yet); then one write
    // per window carries the entries of every run that ended in it.
    const writes = calls.filter((c) => c === "RUN_INDEX stub.recordWritten").length;
    expect(writes).toBeLessThanOrEqual(10 + 4);
    const runs = await listingUntil("workflow=listing-quick", (rs) => runIds.every((id) => statusOf(rs, id)));
    for (const id of runIds) expect(runs.filter((r) => r.run_id === id)).toHaveLength(1);
  });

  it("still lists the run: the run object writes its own entry after answering", async () => {
    const e = await run("listing-quick", { n: 2 });
    const runs = await listingUntil("workflow=listing-quick", (rs) => statusOf(rs, e.run_id) === "complete");
    expect(runs.find((r) => r.run_id === e.run_id)).toEqual({
      run_id: e.run_id,
      workflow: "listing-quick",
      status: "complete",
      created_at: e.created_at,
      finished_at: e.finished_at,
      compensation: null,
    });
  });
});

describe("GET /runs", () => {
  it("lists each of 200 concurrently invoked runs exactly once, newest first, across pages", async () => {
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        invoke("listing-quick", { n }, { wait: n % 2 === 0 ? 30 : undefined }),
      ),
    );
    const ids = await Promise.all(
      responses.map(async (r) => {
        expect([200, 202]).toContain(r.status);
        return ((await r.json()) as { run_id: string }).run_id;
      }),
    );
    expect(new Set(ids).size).toBe(200);
    const want = new Set(ids);
    await listingUntil(
      "workflow=listing-quick",
      (rs) => rs.filter((r) => want.has(r.run_id) && r.status === "complete").length === 200,
    );
    // A fresh walk through every page, 7 at a time: each run once, in order.
    const all = await listAll("workflow=listing-quick", 7);
    const seen = new Map<string, number>();
    for (const r of all) seen.set(r.run_id, (seen.get(r.run_id) ?? 0) + 1);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    for (const id of ids) expect(seen.get(id)).toBe(1);
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1] as Listed, all[i] as Listed];
      const newerOrSame =
        a.created_at > b.created_at || (a.created_at === b.created_at && a.run_id > b.run_id);
      expect(newerOrSame, `${a.created_at} ${a.run_id} before ${b.created_at} ${b.run_id}`).toBe(true);
    }
  }, 120_000);

  it("answers exactly {runs: [{run_id, workflow, status, created_at, finished_at, compensation}], next_cursor}", async () => {
    const e = await run("listing-quick", { n: 3 });
    await listingUntil("workflow=listing-quick", (rs) => statusOf(rs, e.run_id) === "complete");
    const body = await list("workflow=listing-quick&limit=1");
    expect(Object.keys(body).sort()).toEqual(["next_cursor", "runs"]);
    expect(body.runs).toHaveLength(1);
    expect(Object.keys(body.runs[0] ?? {}).sort()).toEqual(
      ["compensation", "created_at", "finished_at", "run_id", "status", "workflow"].sort(),
    );
    expect(typeof body.next_cursor).toBe("string");
  });

  it("returns 20 runs by default and at most `limit`, and next_cursor null on the last page", async () => {
    await Promise.all(Array.from({ length: 25 }, (_, n) => run("listing-quick", { n })));
    expect((await list("workflow=listing-quick")).runs).toHaveLength(20);
    expect((await list("workflow=listing-quick&limit=3")).runs).toHaveLength(3);
    const all = await listAll("workflow=listing-quick", 100);
    expect(all.length).toBeGreaterThanOrEqual(25);
    const pages = Math.ceil(all.length / 100);
    let cursor: string | null = null;
    for (let i = 0; i < pages; i++) {
      const page: ListBody = await list(
        `workflow=listing-quick&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      cursor = page.next_cursor;
    }
    expect(cursor).toBeNull();
  });

  it("filters on the run's status", async () => {
    const ok = await run("listing-quick", { n: 4 });
    const bad = await run("listing-quick", { n: "not a number" });
    expect(ok.status).toBe("complete");
    expect(bad.status).toBe("failed");
    const failed = await listingUntil("workflow=listing-quick&status=failed", (rs) =>
      rs.some((r) => r.run_id === bad.run_id),
    );
    expect(failed.every((r) => r.status === "failed")).toBe(true);
    expect(failed.some((r) => r.run_id === ok.run_id)).toBe(false);
    const complete = await listAll("workflow=listing-quick&status=complete");
    expect(complete.every((r) => r.status === "complete")).toBe(true);
    expect(complete.some((r) => r.run_id === ok.run_id)).toBe(true);
    expect(complete.some((r) => r.run_id === bad.run_id)).toBe(false);
  });

  it("shows a long run as running within 10 s, then complete within 10 s of its end", async () => {
    const t0 = Date.now();
    const runId = await start("listing-slow", { ms: 4000 });
    await listingUntil("workflow=listing-slow&status=running", (rs) => rs.some((r) => r.run_id === runId));
    expect(Date.now() - t0).toBeLessThan(10_000);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    const ended = Date.now();
    await listingUntil("workflow=listing-slow&status=complete", (rs) => rs.some((r) => r.run_id === runId));
    expect(Date.now() - ended).toBeLessThan(10_000);
    expect((await listAll("workflow=listing-slow&status=running")).some((r) => r.run_id === runId)).toBe(
      false,
    );
  }, 30_000);

  it("takes the workflow's credentials", async () => {
    const res = await invoke(
      "listing-protected",
      {},
      { headers: { authorization: `Bearer ${TOKEN}` }, wait: 10 },
    );
    const { run_id } = (await res.json()) as { run_id: string };
    const noAuth = await call("/runs?workflow=listing-protected");
    expect(noAuth.status).toBe(401);
    expect(((await noAuth.json()) as { code: string }).code).toBe("unauthorized");
    const wrong = await call("/runs?workflow=listing-protected", {
      headers: { authorization: "Bearer nope-nope-nope" },
    });
    expect(wrong.status).toBe(401);
    const auth = { authorization: `Bearer ${TOKEN}` };
    await poll(
      `${run_id} listed to its own credential`,
      () => list("workflow=listing-protected", auth),
      (body) => body.runs.some((r) => r.run_id === run_id),
      { timeoutMs: 12_000, intervalMs: 100 },
    );
  });
});

describe("GET /runs refuses a bad query with 400 invalid_query", () => {
  async function expectInvalid(query: string): Promise<void> {
    const res = await call(`/runs?${query}`);
    expect(res.status, query).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const p = (await res.json()) as { code: string; detail: string };
    expect(p.code).toBe("invalid_query");
  }

  it.each([
    "limit=0",
    "limit=101",
    "limit=-1",
    "limit=1.5",
    "limit=abc",
    "limit=",
    "limit=20&limit=30",
    "status=done",
    "status=",
    "status=COMPLETE",
    "cursor=",
    "cursor=garbage",
    "cursor=a.b.c",
  ])("workflow=listing-quick&%s", async (q) => {
    await expectInvalid(`workflow=listing-quick&${q}`);
  });

  it("without a workflow", async () => {
    await expectInvalid("limit=5");
  });

  it("answers 404 workflow_not_found for an unknown workflow", async () => {
    const res = await call("/runs?workflow=nope-not-here");
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("workflow_not_found");
  });

  async function realCursor(query = "workflow=listing-quick"): Promise<string> {
    await Promise.all([run("listing-quick", { n: 1 }), run("listing-quick", { n: 2 })]);
    const body = await listingUntil(query, (rs) => rs.length >= 2).then(() => list(`${query}&limit=1`));
    expect(body.next_cursor).not.toBeNull();
    return body.next_cursor as string;
  }

  it("for a tampered cursor: a changed character, a changed position, a truncation", async () => {
    const cursor = await realCursor();
    const [payload = "", sum = ""] = cursor.split(".");
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
    const decoded = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/"))) as { t: number };
    decoded.t -= 1000;
    const moved = btoa(JSON.stringify(decoded)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    for (const bad of [
      `${flip(payload, 5)}.${sum}`,
      `${payload}.${flip(sum, 0)}`,
      `${moved}.${sum}`,
      cursor.slice(0, -3),
      payload,
      `${cursor}x`,
    ]) {
      await expectInvalid(`workflow=listing-quick&cursor=${encodeURIComponent(bad)}`);
    }
    // The untouched cursor works.
    expect((await call(`/runs?workflow=listing-quick&cursor=${encodeURIComponent(cursor)}`)).status).toBe(
      200,
    );
  });

  it("for a cursor made for another workflow or another status filter", async () => {
    const cursor = await realCursor();
    await expectInvalid(`workflow=listing-slow&cursor=${encodeURIComponent(cursor)}`);
    await expectInvalid(`workflow=listing-quick&status=complete&cursor=${encodeURIComponent(cursor)}`);
  });
});

describe("the listing stays consistent with the runs", () => {
  it("drops a deleted run at once, and a late write of that run cannot bring it back", async () => {
    const e = await run("listing-quick", { n: 5 });
    await listingUntil("workflow=listing-quick", (rs) => statusOf(rs, e.run_id) === "complete");
    expect((await call(`/runs/${e.run_id}`, { method: "DELETE" })).status).toBe(204);
    expect(statusOf(await listAll("workflow=listing-quick"), e.run_id)).toBeUndefined();
    // The run's own write arriving late (e.g. its alarm retrying) is refused by the tombstone.
    await recordRun(env, {
      run_id: e.run_id,
      workflow: "listing-quick",
      status: "complete",
      created_at: e.created_at,
      finished_at: e.finished_at,
    });
    expect(statusOf(await listAll("workflow=listing-quick"), e.run_id)).toBeUndefined();
  });

  it("keeps a run listed when DELETE is refused because it is still active", async () => {
    const runId = await start("listing-slow", { ms: 1500 });
    const res = await call(`/runs/${runId}`, { method: "DELETE" });
    expect(res.status).toBe(409);
    await waitForRun(runId);
    await listingUntil("workflow=listing-slow", (rs) => statusOf(rs, runId) === "complete");
  });

  it("does not list a run whose retention has ended (its storage is deleted at that moment)", async () => {
    const runId = `${"f".repeat(63)}0`;
    const finished = Date.now() - RETENTION_MS - 60_000;
    await recordRun(env, {
      run_id: runId,
      workflow: "listing-quick",
      status: "complete",
      created_at: new Date(finished - 1000).toISOString(),
      finished_at: new Date(finished).toISOString(),
    });
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBeUndefined();
    // One millisecond inside retention it is listed.
    const recent = Date.now() - RETENTION_MS + 60_000;
    const otherId = `${"e".repeat(63)}1`;
    await recordRun(env, {
      run_id: otherId,
      workflow: "listing-quick",
      status: "complete",
      created_at: new Date(recent - 1000).toISOString(),
      finished_at: new Date(recent).toISOString(),
    });
    expect(statusOf(await listAll("workflow=listing-quick"), otherId)).toBe("complete");
  });

  it("lists a finished run whose listing write failed: its alarm retries, also after an eviction", async () => {
    const id = env.RUNS.newUniqueId();
    const stub = env.RUNS.get(id);
    const broken = {
      idFromName: () => {
        throw new Error("the listing is unreachable");
      },
    } as unknown as Env["RUN_INDEX"];
    // This incarnation cannot reach the listing (as if its writes failed or it was evicted first).
    const runId = await startQuickIn(id, broken, 1);
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBeUndefined();
    // The alarm is close (a retry), not at the end of retention.
    const alarm = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect((alarm as number) - Date.now()).toBeLessThan(10_000);
    await evictDurableObject(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBe("complete");
    // Listed at once; once its shard has written the entry, the run's alarm asks again, is told
    // so, and nothing more is due on the run itself (its listing shard ends its retention).
    await poll(
      `the shard to write ${runId}'s entry`,
      () => shardHolds(runId),
      (h) => h.written,
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).toBeNull();
  });

  it("lists a run evicted before its first listing write: the alarm wakes it and writes it", async () => {
    const runId = await start("listing-slow", { ms: 3000 });
    // Evicted while its step runs, before anything listed it.
    await poll(
      `${runId} running`,
      async () => (await (await call(`/runs/${runId}`)).json()) as { status: string },
      (e) => e.status === "running",
    );
    expect(statusOf(await listAll("workflow=listing-slow"), runId)).toBeUndefined();
    await evictDurableObject(runStub(runId));
    // Nothing else touches the run: its first alarm (2 s after it started) resumes it and lists it.
    await listingUntil("workflow=listing-slow", (rs) => statusOf(rs, runId) !== undefined);
    const e = await waitForRun(runId);
    expect(e.status).toBe("complete");
    await listingUntil("workflow=listing-slow", (rs) => statusOf(rs, runId) === "complete");
  }, 30_000);
});

describe("the alarm that guards a finished run's listing entry", () => {
  it("sends the entry again when its shard lost it unwritten (the shard restarted), and the run is listed", async () => {
    const counted = countingIndex();
    const id = env.RUNS.newUniqueId();
    // The shard holds the entry unwritten for 2 s (not 300 ms), long enough to be killed with it
    // on a loaded machine; the kill waits out that window (workerd's eviction), so not longer.
    await slowShard(shardStubOf(id.toString()), 2000);
    const runId = await startQuickIn(id, counted.ns, 1);
    await poll(
      "the entry sent after the answer",
      () => counted.sent(),
      (n) => n >= 1,
    );
    expect(counted.sent()).toBe(1);
    expect(await shardHolds(runId)).toEqual({ buffered: true, written: false });
    // The shard is killed before it writes its batch.
    await evictDurableObject(shardStubOf(runId));
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBeUndefined();
    // The run's guard alarm asks its shard again: the new incarnation takes the entry.
    const guard = await runInDurableObject(runStub(runId), (_o, state) => state.storage.getAlarm());
    expect(guard).not.toBeNull();
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    expect(counted.sent()).toBe(2);
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBe("complete");
    // Once written, the next ask is told so, and nothing more is due on the run.
    await poll(
      `the shard to write ${runId}'s entry`,
      () => shardHolds(runId),
      (h) => h.written,
    );
    expect(await runDurableObjectAlarm(runStub(runId))).toBe(true);
    expect(await runInDurableObject(runStub(runId), (_o, state) => state.storage.getAlarm())).toBeNull();
    expect(statusOf(await listAll("workflow=listing-quick"), runId)).toBe("complete");
  });

  it("does not ask its shard again when another run heard that its batch was written since", async () => {
    // Two runs whose entries go to the same shard.
    const [a, b] = idsOnOneShard(2) as [DurableObjectId, DurableObjectId];
    const counted = countingIndex();
    const first = await startQuickIn(a, counted.ns, 1);
    await poll(
      `the shard to write ${first}'s entry`,
      () => shardHolds(first),
      (h) => h.written,
    );
    expect(counted.sent()).toBe(1);
    // The second run's write is answered by the same incarnation, which says that batch is written.
    const second = await startQuickIn(b, env.RUN_INDEX, 2);
    await poll(
      `the shard to take ${second}'s entry`,
      () => shardHolds(second),
      (h) => h.buffered || h.written,
    );
    expect(await runDurableObjectAlarm(runStub(first))).toBe(true);
    expect(counted.sent(), "the first run's guard sent nothing").toBe(1);
    expect(await runInDurableObject(runStub(first), (_o, state) => state.storage.getAlarm())).toBeNull();
    // Its entry is written: it stays listed after the shard restarts.
    await evictDurableObject(shardStubOf(first));
    expect(statusOf(await listAll("workflow=listing-quick"), first)).toBe("complete");
  });
});

describe("entries that ride together (a busy isolate)", () => {
  /** `n` runs started at once, whose entries all go to one shard. */
  function burstOnOneShard(
    n: number,
    index: Env["RUN_INDEX"],
    vars: Record<string, string>,
    shard?: number,
  ): Promise<string[]> {
    return Promise.all(idsOnOneShard(n, shard).map((id, i) => startQuickIn(id, index, i, vars)));
  }

  const RIDING = { LISTING_RIDE_MS: "250" };

  it("sends a shard one write per window instead of one per run, and lists every run once", async () => {
    const counted = countingIndex();
    // A burst: the runs finish together.
    const runIds = await burstOnOneShard(30, counted.ns, RIDING);
    // The last carrier's window ends; every run is listed, once.
    const runs = await listingUntil("workflow=listing-quick", (rs) => runIds.every((id) => statusOf(rs, id)));
    for (const id of runIds) expect(runs.filter((r) => r.run_id === id)).toHaveLength(1);
    // At most the first ten of a burst write on their own (the isolate is not busy yet); then one
    // write per window carries the entries of every run that finished in it.
    expect(counted.sent()).toBeLessThanOrEqual(10 + 6);
  });

  it("does not hold a burst's last entries back for the whole window: the carrier leaves once runs stop finishing", async () => {
    const counted = countingIndex();
    // A one-second window, as deployed.
    const runIds = await burstOnOneShard(16, counted.ns, { LISTING_RIDE_MS: "1000" });
    const sent = counted.sent();
    expect(sent).toBeLessThan(runIds.length);
    // The carrier's window began no sooner than the first run finished, nor than the last run that
    // wrote on its own (if the isolate was not busy yet); held for the whole window, it would send
    // no sooner than 1 s after that.
    const finished = await Promise.all(
      runIds.map(async (id) =>
        Date.parse(((await (await call(`/runs/${id}`)).json()) as { finished_at: string }).finished_at),
      ),
    );
    const windowFrom = Math.max(Math.min(...finished), counted.sentAt()[sent - 1] ?? 0);
    const carried = await poll(
      "the carrier's write",
      () => counted.sentAt(),
      (t) => t.length > sent,
    );
    expect(carried[sent] as number).toBeLessThan(windowFrom + 1000);
    const listed = await listAll("workflow=listing-quick");
    for (const id of runIds) expect(statusOf(listed, id)).toBe("complete");
  });

  it("lists riders whose batch their shard lost unwritten: each guard alarm sends its entry again", async () => {
    const counted = countingIndex();
    // Ten runs on one shard make the isolate busy; the six after them, on another shard, ride.
    const busyShard = shardOf(env.RUNS.newUniqueId().toString());
    const shard = (busyShard + 1) % SHARDS_PER_BUCKET;
    const shardStub = shardStubOf((idsOnOneShard(1, shard)[0] as DurableObjectId).toString());
    // The riders' shard holds what it takes unwritten for 2 s, long enough to be killed with it.
    await slowShard(shardStub, 2000);
    await burstOnOneShard(10, counted.ns, RIDING, busyShard);
    const riders = await burstOnOneShard(6, counted.ns, RIDING, shard);
    // The carrier sends the riders' entries to the shard they wait in, unwritten.
    await poll(
      "the carrier's write to the riders' shard",
      () => counted.sentTo(shard),
      (n) => n > 0,
    );
    expect(counted.sentTo(shard), "the six riders' entries went in one write").toBe(1);
    for (const id of riders) expect(await shardHolds(id), id).toEqual({ buffered: true, written: false });
    // The shard is killed before it writes its batch.
    await evictDurableObject(shardStub);
    const listed = await listAll("workflow=listing-quick");
    for (const id of riders) expect(statusOf(listed, id)).toBeUndefined();
    // Each rider's guard alarm asks the shard: the new incarnation takes the entry.
    for (const id of riders) expect(await runDurableObjectAlarm(runStub(id))).toBe(true);
    expect(counted.sentTo(shard)).toBe(1 + riders.length);
    const after = await listAll("workflow=listing-quick");
    for (const id of riders) expect(statusOf(after, id)).toBe("complete");
  });
});

describe("retention", () => {
  /** Moves a finished run's times back by more than RUN_RETENTION_S, in its storage. */
  async function ageRun(runId: string): Promise<number> {
    const old = Date.now() - RETENTION_MS - 60_000;
    await runInDurableObject(runStub(runId), (_o, state) => {
      // The `run` row holds the document (and the records that ride with it): src/run/run-store.ts.
      const row = JSON.parse(state.storage.kv.get<string>("run") ?? "null") as {
        doc: Record<string, unknown>;
      };
      const doc = row.doc;
      doc.created_at = new Date(old - 1000).toISOString();
      doc.finished_at = new Date(old).toISOString();
      state.storage.kv.put("run", JSON.stringify(row));
    });
    // A fresh incarnation reads the moved-back times, as after a real week asleep.
    await evictDurableObject(runStub(runId));
    return old;
  }

  it("reads a run past retention as not found, and its storage goes at that read", async () => {
    const e = await run("listing-quick", { n: 7 });
    await listingUntil("workflow=listing-quick", (rs) => statusOf(rs, e.run_id) === "complete");
    await ageRun(e.run_id);
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
    expect(
      await runInDurableObject(runStub(e.run_id), (_o, state) => [...state.storage.kv.list()].length),
    ).toBe(0);
  });

  it("ends the runs of a shard whose hour has passed retention, and keeps the others", async () => {
    const a = await run("listing-quick", { n: 8 });
    const ref = placeRun("listing-quick", a.run_id, Date.parse(a.created_at));
    // `b` shares `a`'s shard (whatever other tests left there), so the shard has a run to keep.
    let b = await run("listing-quick", { n: 9 });
    for (let i = 0; i < 400; i++) {
      const at = placeRun("listing-quick", b.run_id, Date.parse(b.created_at));
      if (at.shard === ref.shard && at.bucket === ref.bucket) break;
      b = await run("listing-quick", { n: 9 });
    }
    await listingUntil("workflow=listing-quick", (rs) =>
      [a, b].every((e) => statusOf(rs, e.run_id) === "complete"),
    );
    // `a` is a week older, in its storage and in its listing entry: its shard's sweep is due.
    const old = await ageRun(a.run_id);
    const shard = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`${ref.workflow}\n${ref.bucket}\n${ref.shard}`));
    // Its entry says so too (a finished entry takes a later finished version).
    await recordRun(env, {
      run_id: a.run_id,
      workflow: "listing-quick",
      status: "complete",
      created_at: a.created_at,
      finished_at: new Date(old).toISOString(),
    });
    expect(await runDurableObjectAlarm(shard)).toBe(true);
    // The sweep asked `a` to go: its storage is empty, without anyone reading it.
    expect(
      await runInDurableObject(runStub(a.run_id), (_o, state) => [...state.storage.kv.list()].length),
    ).toBe(0);
    // `b` (and every other run of the hour) is kept, listed, and the shard waits for them.
    expect((await call(`/runs/${b.run_id}`)).status).toBe(200);
    expect(statusOf(await listAll("workflow=listing-quick"), b.run_id)).toBe("complete");
    // The pass goes on (one alarm per batch) until nothing is due, then waits for the rest.
    let next = await runInDurableObject(shard, (_o, state) => state.storage.getAlarm());
    for (let i = 0; i < 5 && next !== null && next <= Date.now() + 1000; i++) {
      await runDurableObjectAlarm(shard);
      next = await runInDurableObject(shard, (_o, state) => state.storage.getAlarm());
    }
    expect(next).not.toBeNull();
    expect(next as number).toBeGreaterThan(Date.now() + RETENTION_MS - 3_600_000);
  });
});

describe("shards", () => {
  it("spreads one workflow's runs over the shards of their hour", async () => {
    const ids = Array.from({ length: 2000 }, () => env.RUNS.newUniqueId().toString());
    const counts = new Array<number>(SHARDS_PER_BUCKET).fill(0);
    for (const id of ids) counts[shardOf(id)] = (counts[shardOf(id)] ?? 0) + 1;
    const mean = ids.length / SHARDS_PER_BUCKET;
    expect(Math.min(...counts)).toBeGreaterThan(mean * 0.5);
    expect(Math.max(...counts)).toBeLessThan(mean * 1.6);
    expect(BUCKET_MS).toBe(3_600_000);
  });

  it("moves the runs of the old single-object index into the shards on upgrade", async () => {
    const a = await run("listing-legacy", { n: 1 });
    const b = await run("listing-legacy", { n: 2 });
    await listingUntil("workflow=listing-legacy", (rs) => rs.length >= 2);
    // Back to the state before the upgrade: shards empty, the ids in the directory's `runs` table.
    const dir = env.RUN_INDEX.get(env.RUN_INDEX.idFromName("listing-legacy"));
    for (const e of [a, b]) {
      await poll(
        `the shard to write ${e.run_id}'s entry`,
        () => shardHolds(e.run_id, "listing-legacy"),
        (h) => h.written,
      );
    }
    const registered = await runInDurableObject(dir, (_o, state) => {
      state.storage.sql.exec("CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL)");
      for (const e of [a, b])
        state.storage.sql.exec("INSERT INTO runs VALUES (?, ?)", e.run_id, e.created_at);
      return state.storage.sql
        .exec<{ bucket: number; shard: number }>("SELECT bucket, shard FROM shards")
        .toArray();
    });
    for (const s of registered) {
      const shard = env.RUN_INDEX.get(env.RUN_INDEX.idFromName(`listing-legacy\n${s.bucket}\n${s.shard}`));
      await runInDurableObject(shard, (_o, state) => state.storage.sql.exec("DELETE FROM batches"));
      await evictDurableObject(shard);
    }
    for (const e of [a, b]) await evictDurableObject(runStub(e.run_id));
    expect(await listAll("workflow=listing-legacy")).toEqual([]);
    // The next shard registration (a new hour's first run, here called directly) moves them.
    const first = registered[0] as { bucket: number; shard: number };
    await (dir as unknown as { register(b: number, s: number, e: number): Promise<void> }).register(
      first.bucket,
      first.shard,
      Date.now() + RETENTION_MS,
    );
    const runs = await listingUntil("workflow=listing-legacy", (rs) => rs.length === 2);
    expect(runs.map((r) => r.run_id).sort()).toEqual([a.run_id, b.run_id].sort());
    const legacyLeft = await runInDurableObject(dir, (_o, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'runs'").toArray(),
    );
    expect(legacyLeft).toEqual([]);
  });
});
