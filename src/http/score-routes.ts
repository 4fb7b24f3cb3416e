/**
 * `GET /workflows/{name}/scores?since=T&until=T` (docs/http-api.md, "Scores"), with the workflow's
 * credentials: its scores over the window (default the last 24 hours) from src/run/scores/; with
 * `chart=<scorer>` the daily chart of that scorer by arm as SVG (src/viewer/score-chart.ts).
 */
import type { Hono } from "hono";
import type { CompiledWorkflow } from "../bundle.ts";
import { scoreReport } from "../run/scores/score-report.ts";
import { requireReader } from "../triggers/webhook/auth.ts";
import { scoreChartSvg } from "../viewer/score-chart.ts";
import { bad, parseDateTime, single } from "./run-list.ts";

const DAY_MS = 86_400_000;

type Lookup = (name: string) => { key: string; wf: CompiledWorkflow };

export function mountScoreRoutes(app: Hono<{ Bindings: Env }>, invocable: Lookup) {
  app.get("/workflows/:workflow/scores", async (c) => {
    const { wf } = invocable(c.req.param("workflow"));
    await requireReader(wf.auth, c.req.raw.headers, c.env as unknown as Record<string, unknown>);
    const query = new URL(c.req.url).searchParams;
    const untilRaw = single(query, "until");
    const sinceRaw = single(query, "since");
    const until = untilRaw === null ? Date.now() : parseDateTime("until", untilRaw);
    const since = sinceRaw === null ? until - DAY_MS : parseDateTime("since", sinceRaw);
    if (since > until) throw bad("since must not be after until");
    const report = await scoreReport(c.env, wf, since, until);
    const chart = single(query, "chart");
    if (chart !== null) {
      return new Response(scoreChartSvg(report, chart), {
        headers: { "content-type": "image/svg+xml; charset=utf-8", "cache-control": "no-store" },
      });
    }
    return c.json(report);
  });
}
