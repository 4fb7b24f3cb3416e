/**
 * A built Worker served from one local workerd (Miniflare, as `npm run bench` serves its own), its
 * Durable Objects' storage on disk in `persist`, so that it can be killed (SIGKILL: the machine
 * dies, nothing is flushed or told) and served again on the same storage, by the same release or
 * the next one. The upgrade test (test/e2e/upgrade.e2e.test.ts) and `npm run chaos` use it.
 */
import { dirname } from "node:path";
import { workerdPids } from "../bench/cpu.ts";
import { newMiniflare, readyOrDisposed } from "../bench/dev-server.ts";

export interface LocalWorker {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The workerd process (null if it could not be found). */
  pid: number | null;
  /** What the Worker logged so far (console lines). */
  logs(): string[];
  /** Sends `body` to the queue behind the Worker's producer binding `binding` (Miniflare's broker). */
  sendToQueue(binding: string, body: unknown): Promise<void>;
  /** SIGKILL: the process dies mid-whatever, as a machine does. */
  kill(): Promise<void>;
  /** A clean stop. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  scriptPath: string;
  /** Binding name -> Durable Object class name (all SQLite-backed). */
  durableObjects: Record<string, string>;
  persist: string;
  vars?: Record<string, string>;
  /** Miniflare options besides (queues, ratelimits, …). */
  extra?: Record<string, unknown>;
}

export async function serveWorker(o: ServeOptions): Promise<LocalWorker> {
  const before = workerdPids();
  const lines: string[] = [];
  const durableObjects: Record<string, { className: string; useSQLite: true }> = {};
  for (const [name, className] of Object.entries(o.durableObjects))
    durableObjects[name] = { className, useSQLite: true };
  const mf = await newMiniflare({
    scriptPath: o.scriptPath,
    // Module names are paths under this root: a script outside the working directory needs its own.
    modulesRoot: dirname(o.scriptPath),
    resourcePersistencePath: o.persist,
    durableObjects,
    bindings: { RUN_RETENTION_S: "604800", ...o.vars },
    handleStructuredLogs: (log: { message?: string }) => {
      if (log.message) lines.push(log.message);
    },
    ...o.extra,
  });
  const url = await readyOrDisposed(mf);
  const pid = workerdPids().find((p) => !before.includes(p)) ?? null;
  let gone = false;
  return {
    url: url.origin,
    pid,
    logs: () => lines,
    sendToQueue: async (binding, body) => {
      const queue = (await (
        mf as unknown as { getQueueProducer(b: string): Promise<{ send(b: unknown): Promise<void> }> }
      ).getQueueProducer(binding)) as { send(b: unknown): Promise<void> };
      await queue.send(body);
    },
    kill: async () => {
      if (gone) return;
      gone = true;
      if (pid !== null) process.kill(pid, "SIGKILL");
      // Its runtime is dead already: what is left to close must not hold the caller.
      await Promise.race([mf.dispose().catch(() => {}), new Promise((r) => setTimeout(r, 5_000))]);
    },
    stop: async () => {
      if (gone) return;
      gone = true;
      await mf.dispose();
    },
  };
}
