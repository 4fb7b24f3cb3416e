/**
 * Upgrades (docs/operations.md, "Definitions" and "Upgrades"): runs stored by the previous release
 * keep working after this one is deployed over them, and runs stored by this one keep working
 * after the next deploy. The previous release is its own Worker, kept in test/upgrade/previous/ by
 * `npm run upgrade:snapshot`; both serve test/upgrade/workflows from one local workerd whose
 * storage stays on disk, and each deploy is a SIGKILL (nothing flushed) and a start of the next
 * Worker on that storage. `up-changed` is deployed at 1.0.0, 2.0.0 and 3.0.0, so its runs are
 * pinned to versions the running code no longer holds.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalWorker, serveWorker } from "../../scripts/local-worker.ts";
import { buildRelease, type ReleaseBuild } from "../../scripts/release-build.ts";
import { poll } from "../support/poll.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const UPGRADE = join(ROOT, "test/upgrade");
const previous = JSON.parse(readFileSync(join(UPGRADE, "previous/release.json"), "utf8")) as {
  commit: string;
  durable_objects: Record<string, string>;
};

// biome-ignore lint/suspicious/noExplicitAny: envelopes are checked field by field in the tests
type Envelope = Record<string, any>;

const tmp = mkdtempSync(join(tmpdir(), "workflow-edge-upgrade-"));
const persist = join(tmp, "state");
let worker: LocalWorker;
let slow: Server;
let slowUrl = "";
/** What the slow receiver took: the item and the idempotency key of each request. */
const received: Array<{ key: string; item: string; idempotency: string }> = [];

/** test/upgrade/workflows with `up-changed` at `version`. */
function workflowsAt(version: string): string {
  const dir = join(tmp, `workflows-${version}`);
  cpSync(join(UPGRADE, "workflows"), dir, { recursive: true });
  const file = join(dir, "up-changed.workflow.yaml");
  writeFileSync(file, readFileSync(file, "utf8").replaceAll("1.0.0", version));
  return dir;
}

async function deploy(build: ReleaseBuild): Promise<void> {
  await worker?.kill();
  worker = await serveWorker({
    scriptPath: build.scriptPath,
    durableObjects: build.durableObjects,
    persist,
    vars: { ALLOW_PRIVATE_WEBHOOKS: "true", TARGET_URL: slowUrl },
  });
}

async function api(path: string, init: RequestInit = {}): Promise<{ status: number; body: Envelope }> {
  const res = await fetch(`${worker.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Envelope) : {} };
}

async function invoke(name: string, params: unknown, wait = false): Promise<Envelope> {
  const { status, body } = await api(`/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait ? { prefer: "wait=30" } : {}) },
    body: JSON.stringify(params),
  });
  expect([200, 202]).toContain(status);
  return body;
}

const envelope = async (runId: string) => (await api(`/runs/${runId}`)).body;

function stepIs(runId: string, step: string, status: string): Promise<Envelope> {
  return poll(
    `step ${step} of ${runId} to be ${status}`,
    () => envelope(runId),
    (e) => e.steps?.find((s: { id: string }) => s.id === step)?.status === status,
    { timeoutMs: 20_000, intervalMs: 100 },
  );
}

function finished(runId: string): Promise<Envelope> {
  return poll(
    `run ${runId} to finish`,
    () => envelope(runId),
    (e) => ["complete", "failed", "canceled"].includes(e.status),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

function signal(runId: string, name: string, body: unknown) {
  return api(`/runs/${runId}/signals/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** A re-run of `runId`; with `wait`, its answer is the finished envelope. */
function rerun(runId: string, body: unknown, wait = true) {
  return api(`/runs/${runId}/rerun`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(wait ? { prefer: "wait=30" } : {}) },
    body: JSON.stringify(body),
  });
}

/** Whether run `runId`'s stored row keeps only its definition's version (read from its SQLite file on disk). */
async function keepsOnlyItsVersion(runId: string): Promise<boolean> {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(join(persist, "do", "-RunObject", `${runId}.sqlite`), { readOnly: true });
  try {
    // The value is the row's JSON text as workerd serializes a string (its bytes, with a header).
    const row = db.prepare("SELECT value FROM _cf_KV WHERE key = 'run'").get() as { value: Uint8Array };
    const text = Buffer.from(row.value).toString("latin1");
    return text.includes('"def_ref":"') && !text.includes('"def":{');
  } finally {
    db.close();
  }
}

async function listed(workflow: string): Promise<Array<{ run_id: string; status: string }>> {
  return (await api(`/runs?workflow=${workflow}&limit=100`)).body.runs;
}

let current: ReleaseBuild;
let next: ReleaseBuild;
/** Runs the previous release wrote, by what they are. */
const runs = {} as Record<"done" | "changed" | "sleep" | "first" | "second" | "fanout", Envelope>;

beforeAll(async () => {
  slow = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    received.push({
      key: url.searchParams.get("key") ?? "",
      item: url.searchParams.get("item") ?? "",
      idempotency: String(req.headers["idempotency-key"] ?? ""),
    });
    req.resume();
    setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}'), 1200);
  });
  await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  current = await buildRelease(ROOT, workflowsAt("2.0.0"), join(tmp, "current"));
  next = await buildRelease(ROOT, workflowsAt("3.0.0"), join(tmp, "next"));

  // The previous release writes: finished runs, waits, a sleep, a queue, a fan-out in flight.
  await deploy({ scriptPath: join(UPGRADE, "previous/worker.js"), durableObjects: previous.durable_objects });
  runs.done = await invoke("up-done", { n: 21 }, true);
  runs.changed = await invoke("up-changed", {});
  await stepIs(runs.changed.run_id, "pause", "waiting");
  runs.sleep = await invoke("up-sleep", {});
  runs.first = await invoke("up-queue", { group: "g" });
  await stepIs(runs.first.run_id, "hold", "waiting");
  runs.second = await invoke("up-queue", { group: "g" });
  expect((await envelope(runs.second.run_id)).status).toBe("queued");
  runs.fanout = await invoke("up-fanout", { key: "fan", items: ["a", "b", "c", "d", "e"] });
  // Cut mid-flight: some items sent, not all answered.
  await poll(
    "the fan-out's first items to be sent",
    () => received.filter((r) => r.key === "fan").length,
    (n) => n >= 2,
    { timeoutMs: 20_000, intervalMs: 20 },
  );
  await deploy(current);
}, 300_000);

afterAll(async () => {
  await worker?.kill();
  slow?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe(`runs stored by the previous release (${previous.commit.slice(0, 12)}), after this one is deployed`, () => {
  it("reads a finished run exactly as it was answered, and re-runs it on its pinned definition", async () => {
    const read = await envelope(runs.done.run_id);
    expect(read).toEqual(runs.done);
    const again = await rerun(runs.done.run_id, { from: "report", definition: "pinned" });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("complete");
    expect(again.body.output).toEqual(runs.done.output);
  });

  it("resumes a run waiting for a signal, on the version it was pinned to", async () => {
    expect((await signal(runs.changed.run_id, "go", { said: "after the upgrade" })).status).toBe(200);
    const e = await finished(runs.changed.run_id);
    expect(e.status).toBe("complete");
    expect(e.workflow_version).toBe("1.0.0");
    expect(e.output).toEqual({ result: { version: "1.0.0", said: "after the upgrade" } });
  });

  it("wakes a sleep that was under way, on its own", async () => {
    const e = await finished(runs.sleep.run_id);
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.slept_s).toBeGreaterThanOrEqual(4);
  });

  it("keeps a concurrency key's slot and queue: the queued run starts when the first is done", async () => {
    expect((await signal(runs.first.run_id, "go", {})).status).toBe(200);
    expect((await finished(runs.first.run_id)).status).toBe("complete");
    await stepIs(runs.second.run_id, "hold", "waiting");
    expect((await signal(runs.second.run_id, "go", {})).status).toBe(200);
    expect((await finished(runs.second.run_id)).status).toBe("complete");
  });

  it("finishes a fan-out cut mid-flight, every item sent with the run's idempotency key", async () => {
    const e = await finished(runs.fanout.run_id);
    expect(e.status).toBe("complete");
    expect(e.output).toEqual({ result: 5 });
    const sent = received.filter((r) => r.key === "fan");
    expect(new Set(sent.map((r) => r.item))).toEqual(new Set(["0", "1", "2", "3", "4"]));
    for (const r of sent) expect(r.idempotency).toBe(`${runs.fanout.run_id}:post/${r.item}`);
  });

  it("lists every run with its final status", async () => {
    const want = [runs.done, runs.changed, runs.sleep, runs.first, runs.second, runs.fanout];
    for (const run of want) {
      const name = (await envelope(run.run_id)).workflow as string;
      await poll(
        `${run.run_id} listed complete`,
        () => listed(name),
        (rs) => rs.some((r) => r.run_id === run.run_id && r.status === "complete"),
        { timeoutMs: 20_000, intervalMs: 200 },
      );
    }
  });
});

describe("runs stored by this release, after the next deploy", () => {
  const mine: Envelope[] = [];

  beforeAll(async () => {
    // Several runs: the first of a version in an isolate keeps its definition inline, the later
    // ones only its version (the store has answered by then).
    for (let i = 0; i < 4; i++) {
      const e = await invoke("up-changed", {});
      await stepIs(e.run_id, "pause", "waiting");
      mine.push(e);
    }
    mine.push(await invoke("up-done", { n: 4 }, true));
    await deploy(next);
  }, 120_000);

  it("resumes waiting runs on the version they were pinned to (2.0.0, the code now holds 3.0.0)", async () => {
    // Those that keep only their version read their definition from the store.
    const onlyVersion = await Promise.all(mine.slice(0, 4).map((e) => keepsOnlyItsVersion(e.run_id)));
    expect(onlyVersion.filter(Boolean).length).toBeGreaterThanOrEqual(2);
    for (const e of mine.slice(0, 4)) {
      expect((await signal(e.run_id, "go", { said: "next" })).status).toBe(200);
      const done = await finished(e.run_id);
      expect(done.workflow_version).toBe("2.0.0");
      expect(done.output).toEqual({ result: { version: "2.0.0", said: "next" } });
    }
  });

  it("re-runs a run on its pinned definition, or on the one deployed now", async () => {
    const pinned = await rerun(mine[0]?.run_id as string, { from: "done", definition: "pinned" });
    expect(pinned.body.output).toEqual({ result: { version: "2.0.0", said: "next" } });
    const deployed = await rerun(mine[0]?.run_id as string, { from: "which", definition: "current" }, false);
    expect(deployed.status).toBe(202);
    const e = await stepIs(deployed.body.run_id, "pause", "waiting");
    expect(e.workflow_version).toBe("3.0.0");
  });

  it("reads a finished run as it was answered", async () => {
    const done = mine[4] as Envelope;
    expect(await envelope(done.run_id)).toEqual(done);
  });
});
