/**
 * `workflow-edge scores NAME [--since T] [--until T]` (docs/cli.md): the workflow's scores over the
 * window (`GET /workflows/{name}/scores`, default the last 24 hours): one line per step, scorer,
 * version and arm with its count, mean and percentiles, then each arm against its step's first
 * (the difference of means, its 95 % interval, and whether it is significant).
 */
import { type Connection, request } from "./api.ts";
import { table } from "./render.ts";
import { need, type Out } from "./usage.ts";

interface Report {
  runs: number;
  scores: Array<{
    step: string;
    scorer: string;
    version: string | null;
    arm: string | null;
    count: number;
    mean: number;
    p10: number;
    p50: number;
    p90: number;
  }>;
  comparisons: Array<{
    step: string;
    scorer: string;
    arm: string;
    control: string;
    diff: number;
    ci95: [number, number];
    significant: boolean;
  }>;
}

export async function scores(
  conn: Connection,
  out: Out,
  args: string[],
  values: { since?: string; until?: string },
  json: boolean,
): Promise<number> {
  const [name] = need(args, 1, "workflow NAME");
  const query = new URLSearchParams();
  if (values.since) query.set("since", values.since);
  if (values.until) query.set("until", values.until);
  const path = `/workflows/${encodeURIComponent(name as string)}/scores${query.size > 0 ? `?${query}` : ""}`;
  const body = (await request(conn, "GET", path)).body as Report;
  if (json) {
    out.print(JSON.stringify(body, null, 2));
    return 0;
  }
  const f = (n: number) => n.toFixed(2);
  const lines = [
    table([
      ["STEP", "SCORER", "VERSION", "ARM", "COUNT", "MEAN", "P10", "P50", "P90"],
      ...body.scores.map((s) => [
        s.step,
        s.scorer,
        s.version ?? "-",
        s.arm ?? "-",
        String(s.count),
        f(s.mean),
        f(s.p10),
        f(s.p50),
        f(s.p90),
      ]),
    ]),
  ];
  if (body.comparisons.length > 0) {
    lines.push(
      "",
      table([
        ["STEP", "SCORER", "ARM", "AGAINST", "DIFF", "95 % INTERVAL", ""],
        ...body.comparisons.map((c) => [
          c.step,
          c.scorer,
          c.arm,
          c.control,
          `${c.diff >= 0 ? "+" : ""}${f(c.diff)}`,
          `[${f(c.ci95[0])}, ${f(c.ci95[1])}]`,
          c.significant ? "significant" : "not significant",
        ]),
      ]),
    );
  }
  lines.push(`${body.runs} run${body.runs === 1 ? "" : "s"} read`);
  out.print(lines.join("\n"));
  return 0;
}
