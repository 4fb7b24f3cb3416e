/**
 * The definition store (docs/operations.md, "Definitions"): each version's definitions kept once,
 * a run keeping only its version once they are, and a run pinned to a version the running code
 * no longer holds (after a deploy) read, resumed and re-run on the definition it was pinned to.
 * "After a deploy" is made by hand: a stored run's version is moved to one only the store holds.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../../../src/bundle.ts";
import { poll } from "../../support/poll.ts";
import { call, type Envelope, invoke, run, uniqueKey, waitForRun } from "../../worker/harness.ts";
import { storedRows } from "../../worker/stored-rows.ts";

const code = workflowBundle as Bundle;
const runStub = (id: string) => env.RUNS.get(env.RUNS.idFromString(id));
const storeOf = (hash: string) => env.DEFINITIONS.get(env.DEFINITIONS.idFromName(hash));

/** The rows of version `hash`'s store. */
function storeRows(hash: string): Promise<string[]> {
  return runInDurableObject(storeOf(hash), (_o, state: DurableObjectState) =>
    [...state.storage.kv.list<string>()].map(([k]) => k),
  );
}

/** Runs of `name` until one keeps only its version (the store has answered for it in this isolate). */
async function runKeepingItsVersion(name: string, params: Record<string, unknown>): Promise<Envelope> {
  return poll(
    `a run of ${name} that keeps only its version`,
    async () => {
      const e = await run(name, params);
      return { e, definition: (await storedRows(runStub(e.run_id))).definition };
    },
    (r) => r.definition === "version",
  ).then((r) => r.e);
}

/**
 * As after a deploy: run `runId`'s stored version becomes `hash`, which only the store holds, with
 * the run's definition changed by `change`; the object is evicted, so the next call reads it anew.
 */
async function movedToOldVersion(runId: string, hash: string, change: (def: Bundle) => void): Promise<void> {
  const stub = runStub(runId);
  await runInDurableObject(stub, (_o, state: DurableObjectState) => {
    const row = JSON.parse(state.storage.kv.get<string>("run") as string) as {
      doc: { workflow_key: string; def?: Bundle; def_ref?: string };
    };
    const key = row.doc.workflow_key;
    const def = structuredClone(
      row.doc.def ?? JSON.parse(state.storage.kv.get<string>("def") ?? "null") ?? pinnedOf(key),
    ) as Bundle;
    def.hash = hash;
    change(def);
    delete row.doc.def;
    row.doc.def_ref = hash;
    state.storage.kv.delete("def");
    state.storage.kv.put("run", JSON.stringify(row));
    return storeOf(hash).keep(key, JSON.stringify(def));
  });
  await evictDurableObject(stub);
}

/** The code's own definition of workflow `key` (what a run of it pins). */
function pinnedOf(key: string): Bundle {
  const wf = code.workflows[key];
  if (!wf) throw new Error(`no workflow ${key}`);
  return { ...code, workflows: { [key]: wf }, invocable: {} };
}

const oldHash = () => crypto.randomUUID().replaceAll("-", "").padEnd(64, "0");
const versionOf = (v: string) => (def: Bundle) => {
  for (const wf of Object.values(def.workflows)) wf.version = v;
};

describe("the definition store", () => {
  it("keeps a version's definition once, and a run of a kept version keeps only its version", async () => {
    const first = await run("rows-ten", {});
    const key = code.invocable["rows-ten"] as string;
    await poll(
      "the store to keep rows-ten",
      () => storeRows(code.hash),
      (rows) => rows.includes(`def/${key}`),
    );
    const e = await runKeepingItsVersion("rows-ten", {});
    expect(await storedRows(runStub(e.run_id))).toEqual({ keys: ["run"], definition: "version" });
    // More runs write nothing more to the store.
    for (let i = 0; i < 5; i++) await run("rows-ten", {});
    expect((await storeRows(code.hash)).filter((k) => k === `def/${key}`)).toHaveLength(1);
    // Read back after an eviction, from the code's own definition.
    await evictDurableObject(runStub(e.run_id));
    const again = (await (await call(`/runs/${e.run_id}`)).json()) as Envelope;
    expect(again).toEqual(e);
    expect(first.status).toBe("complete");
  });

  it("reads a finished run pinned to a version the code no longer holds, and re-runs it on that definition", async () => {
    const e = await runKeepingItsVersion("rows-ten", {});
    const hash = oldHash();
    await movedToOldVersion(e.run_id, hash, versionOf("0.9.0-old"));
    const read = (await (await call(`/runs/${e.run_id}`)).json()) as Envelope;
    expect(read.status).toBe("complete");
    expect(read.workflow_version).toBe("0.9.0-old");
    expect(read.output).toEqual(e.output);
    expect((await call(`/runs/${e.run_id}/graph`)).status).toBe(200);
    const res = await call(`/runs/${e.run_id}/rerun`, {
      method: "POST",
      headers: { prefer: "wait=10", "content-type": "application/json" },
      body: JSON.stringify({ from: "s2", definition: "pinned" }),
    });
    expect(res.status).toBe(200);
    const rerun = (await res.json()) as Envelope;
    expect(rerun.status).toBe("complete");
    expect(rerun.workflow_version).toBe("0.9.0-old");
    // The re-run, read anew, is on that version too.
    await evictDurableObject(runStub(rerun.run_id));
    expect(((await (await call(`/runs/${rerun.run_id}`)).json()) as Envelope).workflow_version).toBe(
      "0.9.0-old",
    );
  });

  it("resumes a run waiting across a deploy on the version it was pinned to", async () => {
    // Kept by its version first, so that moving it is what a deploy does to it.
    await runKeepingItsVersion("rows-ten", {});
    const res = await invoke("wait-signal", { key: uniqueKey("def-wait"), timeout_s: 30 });
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    await poll(
      `run ${run_id} to wait`,
      async () => (await (await call(`/runs/${run_id}`)).json()) as Envelope,
      (e) => e.steps.find((s: { id: string }) => s.id === "payment")?.status === "waiting",
    );
    await movedToOldVersion(run_id, oldHash(), versionOf("0.9.0-waiting"));
    const sent = await call(`/runs/${run_id}/signals/payment_received`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ amount: 7 }),
    });
    expect(sent.status).toBe(200);
    const e = await waitForRun(run_id);
    expect(e.status).toBe("complete");
    expect(e.workflow_version).toBe("0.9.0-waiting");
    expect(e.steps[1].output).toEqual({ amount: 7 });
  });

  it("refuses to read a run whose version nobody kept, with a problem and no internals", async () => {
    const e = await runKeepingItsVersion("rows-ten", {});
    const stub = runStub(e.run_id);
    await runInDurableObject(stub, (_o, state: DurableObjectState) => {
      const row = JSON.parse(state.storage.kv.get<string>("run") as string) as { doc: { def_ref?: string } };
      row.doc.def_ref = oldHash();
      state.storage.kv.put("run", JSON.stringify(row));
    });
    await evictDurableObject(stub);
    const res = await call(`/runs/${e.run_id}`);
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const body = await res.text();
    expect(body).not.toMatch(/at \w+ \(|\.ts:\d+/);
  });
});
