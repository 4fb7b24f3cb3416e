/** Helpers shared by the burst tests: invoke a burst at once, and when each run's work reached the target. */
import { expect } from "vitest";
import { call, type Envelope, invoke, targetLog } from "../harness.ts";

export interface Answer {
  status: number;
  body: { run_id: string; status: string };
}

/** Invokes `workflow` once per body, all at once; every answer. */
export async function burst(workflow: string, bodies: unknown[]): Promise<Answer[]> {
  return Promise.all(
    bodies.map(async (b) => {
      const res = await invoke(workflow, b);
      return { status: res.status, body: (await res.json()) as Answer["body"] };
    }),
  );
}

export async function envelope(runId: string): Promise<Envelope> {
  const res = await call(`/runs/${runId}`);
  expect(res.status).toBe(200);
  return res.json();
}

/** The bodies the target received under `group`, with their arrival times, in arrival order. */
export async function arrivals(
  group: string,
): Promise<Array<{ time: number; body: Record<string, unknown> }>> {
  return (await targetLog(group)).map((r) => ({ time: r.time, body: JSON.parse(r.body) }));
}
