/**
 * Per-key concurrency (docs/triggers.md): one Durable Object per (workflow, key) holds which runs of that
 * key are active and which wait, in invoke order. A new run of a workflow that declares
 * `invoke.concurrency` asks it for a slot when its object creates it; a run that ends (or is
 * canceled while queued) releases it, and the next queued run is told to begin. Only such
 * workflows contact one more object on their invoke path; others never see this class.
 *
 * The runs themselves keep the truth of their status: a run told to begin that has meanwhile
 * ended (canceled) releases at once, and a release repeated after an eviction changes nothing.
 */
import { DurableObject } from "cloudflare:workers";
import { runStub } from "./run-rpc.ts";

const ACTIVE = "active/";
const QUEUE = "queue/";

export class ConcurrencyKey extends DurableObject<Env> {
  async admit(runId: string, limit: number): Promise<"start" | "queued"> {
    const kv = this.ctx.storage.kv;
    if (kv.get<number>("limit") !== limit) kv.put("limit", limit);
    if (kv.get(ACTIVE + runId) !== undefined) return "start";
    if (this.queued().some(([, id]) => id === runId)) return "queued";
    if (this.active().length < limit && this.queued().length === 0) {
      kv.put(ACTIVE + runId, Date.now());
      return "start";
    }
    const seq = (kv.get<number>("seq") ?? 0) + 1;
    kv.put("seq", seq);
    kv.put(`${QUEUE}${String(seq).padStart(12, "0")}`, runId);
    return "queued";
  }

  async release(runId: string): Promise<void> {
    const kv = this.ctx.storage.kv;
    kv.delete(ACTIVE + runId);
    for (const [k, id] of this.queued()) if (id === runId) kv.delete(k);
    await this.promote();
  }

  /** Queued runs take the free slots, oldest first. */
  private async promote(): Promise<void> {
    const kv = this.ctx.storage.kv;
    const limit = kv.get<number>("limit") ?? 1;
    const begun: string[] = [];
    for (const [k, runId] of this.queued()) {
      if (this.active().length >= limit) break;
      kv.delete(k);
      kv.put(ACTIVE + runId, Date.now());
      begun.push(runId);
    }
    await Promise.all(
      begun.map(async (runId) => {
        // A run that cannot begin any more (canceled, deleted) gives its slot back.
        const ok =
          (await runStub(this.env, runId)
            ?.begin()
            .catch(() => true)) ?? false;
        if (!ok) await this.release(runId);
      }),
    );
  }

  private active(): string[] {
    return [...this.ctx.storage.kv.list({ prefix: ACTIVE })].map(([k]) => k.slice(ACTIVE.length));
  }

  private queued(): Array<[string, string]> {
    return [...this.ctx.storage.kv.list<string>({ prefix: QUEUE })];
  }
}
