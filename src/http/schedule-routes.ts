/**
 * The routes of a workflow's schedule (docs/http-api.md, "Schedules"): `GET
 * /workflows/{name}/schedules` (no credentials, like the front page) and, with the workflow's
 * credentials, what an operator asks of one entry by its 0-based index: `POST
 * …/schedules/{index}/run`, `…/pause`, `…/resume` and `…/backfill?from=T&to=T`
 * (src/triggers/cron/on-demand.ts).
 */
import type { Hono } from "hono";
import type { CompiledWorkflow } from "../bundle.ts";
import { backfill, runNow, scheduleEntry, setPaused } from "../triggers/cron/on-demand.ts";
import { isPaused, scheduleState } from "../triggers/cron/schedule-state.ts";
import { idempotencyKeyOf } from "../triggers/start-request.ts";
import { requireReader } from "../triggers/webhook/auth.ts";
import { invokeAnswer } from "../triggers/webhook/invoke.ts";
import { bad, parseDateTime, single } from "./run-list.ts";
import { schedulesOf } from "./schedules.ts";

type Lookup = (name: string) => { key: string; wf: CompiledWorkflow };

export function mountScheduleRoutes(app: Hono<{ Bindings: Env }>, invocable: Lookup) {
  app.get("/workflows/:workflow/schedules", async (c) => {
    const { wf } = invocable(c.req.param("workflow"));
    // The schedule object is asked only for a workflow that has a schedule.
    const paused = wf.schedule.length > 0 ? await scheduleState(c.env, wf.name).paused() : [];
    const entries = wf.schedule;
    return c.json(
      schedulesOf(wf, new URL(c.req.url).searchParams, Date.now(), (i) =>
        isPaused(paused, i, entries[i] as (typeof entries)[number]),
      ),
    );
  });

  /** The workflow and entry a route names, once the caller showed the workflow's credentials. */
  const entryOf = async (c: { env: Env; req: { param(k: string): string; raw: Request } }) => {
    const { key, wf } = invocable(c.req.param("workflow"));
    await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
    return { key, wf, at: scheduleEntry(wf, c.req.param("index")) };
  };

  app.post("/workflows/:workflow/schedules/:index/run", async (c) => {
    const { key, wf, at } = await entryOf(c);
    const idempotencyKey = idempotencyKeyOf(c.req.raw.headers);
    const result = await runNow(c.env, key, wf, at.index, idempotencyKey);
    const started = { params: at.entry.params, request: {}, idempotencyKey, waitS: 0 };
    return invokeAnswer(wf, started, result, c.env as unknown as Record<string, unknown>);
  });

  for (const [action, paused] of [
    ["pause", true],
    ["resume", false],
  ] as const) {
    app.post(`/workflows/:workflow/schedules/:index/${action}`, async (c) => {
      const { wf, at } = await entryOf(c);
      const now = await setPaused(c.env, wf, at, paused);
      return c.json({
        index: at.index,
        cron: at.entry.cron,
        timezone: at.entry.timezone,
        paused: now.some((p) => p.index === at.index),
      });
    });
  }

  app.post("/workflows/:workflow/schedules/:index/backfill", async (c) => {
    const { key, wf, at } = await entryOf(c);
    const query = new URL(c.req.url).searchParams;
    const rawFrom = single(query, "from");
    const rawTo = single(query, "to");
    if (rawFrom === null || rawTo === null) throw bad("backfill needs `from` and `to` (RFC 3339 times)");
    const runs = await backfill(
      c.env,
      key,
      wf,
      at,
      parseDateTime("from", rawFrom),
      parseDateTime("to", rawTo),
    );
    return c.json({ runs });
  });
}
