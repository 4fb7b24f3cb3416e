/**
 * Keyed signals (docs/http-api.md): one Durable Object per (workflow, signal name, key), so a sender that
 * knows no run id (a payment provider knows the order id) reaches every run waiting for it, and
 * no object sees every signal of a workflow. A run whose wait has a key registers here when the
 * wait starts; a signal is handed to each registered run (the run checks it still waits for it,
 * with that key, and that the body fits its schema), or kept for 24 hours for the first such wait
 * that starts. Registrations of runs that stopped waiting are dropped when a signal finds them so.
 */
import { DurableObject } from "cloudflare:workers";
import type { Json } from "../../bundle.ts";
import { runStub } from "../run-rpc.ts";
import { KEPT_SIGNAL_MS, type KeyedSendResult } from "./signal-key-rpc.ts";

const WAITING = "waiting/";
const KEPT = "kept/";

export class SignalKey extends DurableObject<Env> {
  async register(runId: string): Promise<Json | null> {
    const kept = this.takeKept();
    if (kept !== undefined) return kept;
    this.ctx.storage.kv.put(WAITING + runId, "1");
    return null;
  }

  async send(body: Json, name: string, key: string): Promise<KeyedSendResult> {
    const kv = this.ctx.storage.kv;
    const runs = [...kv.list<string>({ prefix: WAITING })].map(([k]) => k.slice(WAITING.length));
    const delivered: string[] = [];
    const refused: Array<{ path: string; message: string }> = [];
    await Promise.all(
      runs.map(async (runId) => {
        const result =
          (await runStub(this.env, runId)
            ?.signal(name, body, key)
            .catch(() => null)) ?? null;
        if (result === null) return; // unreachable now: asked again with the next signal
        if (result.outcome === "delivered") delivered.push(runId);
        if (result.outcome === "invalid") {
          refused.push(...result.errors);
          return; // it still waits (for a signal that fits)
        }
        kv.delete(WAITING + runId);
      }),
    );
    if (delivered.length > 0) return { outcome: "delivered", runs: delivered.sort() };
    if (refused.length > 0) return { outcome: "invalid", errors: refused };
    kv.put(`${KEPT}${String(Date.now()).padStart(15, "0")}-${crypto.randomUUID()}`, {
      body,
      until: Date.now() + KEPT_SIGNAL_MS,
    });
    return { outcome: "kept" };
  }

  /** The oldest kept signal still within its 24 hours (expired ones are dropped on the way). */
  private takeKept(): Json | undefined {
    for (const [k, v] of this.ctx.storage.kv.list<{ body: Json; until: number }>({ prefix: KEPT })) {
      this.ctx.storage.kv.delete(k);
      if (v.until > Date.now()) return v.body;
    }
    return undefined;
  }
}
