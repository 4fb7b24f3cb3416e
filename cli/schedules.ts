/**
 * `workflow-edge schedules …` (docs/cli.md): a workflow's schedule entries and their next fire
 * times, and what an operator asks of one entry by its 0-based index (docs/http-api.md,
 * "Schedules"): `run` it now, `pause` or `resume` it, `backfill` its firings between two times.
 */
import { type Connection, request } from "./api.ts";
import { type Schedule, schedulesTable } from "./render.ts";
import { need, type Out, UsageError } from "./usage.ts";

const ACTIONS = new Set(["run", "pause", "resume", "backfill"]);

export async function schedules(
  conn: Connection,
  out: Out,
  args: string[],
  values: Record<string, unknown>,
  json: boolean,
): Promise<number> {
  const print = (body: unknown, text: string) => out.print(json ? JSON.stringify(body, null, 2) : text);
  const action = args[0];
  if (action !== undefined && ACTIONS.has(action) && args.length >= 2) {
    const [name, index] = need(args.slice(1), 2, "workflow NAME and entry INDEX");
    const base = `/workflows/${encodeURIComponent(name as string)}/schedules/${encodeURIComponent(index as string)}`;
    if (action !== "backfill" && (values.from || values.to))
      throw new UsageError(`schedules ${action} does not take --from or --to`);
    if (action === "backfill") {
      if (!values.from || !values.to) throw new UsageError("schedules backfill needs --from T and --to T");
      const query = new URLSearchParams({ from: String(values.from), to: String(values.to) });
      const body = (await request(conn, "POST", `${base}/backfill?${query}`)).body as {
        runs: Array<{ at: string; run_id: string; started: boolean }>;
      };
      const started = body.runs.filter((r) => r.started).length;
      const lines = body.runs.map(
        (r) => `${r.at}  ${r.run_id}  ${r.started ? "started" : "already started"}`,
      );
      print(body, [...lines, `${started} of ${body.runs.length} firing(s) started`].join("\n"));
      return 0;
    }
    const body = (await request(conn, "POST", `${base}/${action}`)).body as Record<string, unknown>;
    if (action === "run") print(body, `started ${String(body.run_id)}`);
    else print(body, `entry ${index} of ${name}: ${body.paused ? "paused" : "running on schedule"}`);
    return 0;
  }
  if (values.to) throw new UsageError("schedules NAME does not take --to");
  const [name] = need(args, 1, "workflow NAME");
  const query = new URLSearchParams();
  if (values.from) query.set("from", String(values.from));
  if (values.count) query.set("count", String(values.count));
  const path = `/workflows/${encodeURIComponent(name as string)}/schedules${query.size > 0 ? `?${query}` : ""}`;
  const body = (await request(conn, "GET", path)).body as { schedules: Schedule[] };
  print(body, schedulesTable(body.schedules));
  return 0;
}
