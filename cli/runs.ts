/**
 * The `runs` commands of the CLI (docs/cli.md), and how a run is shown: step by step, accepted, or
 * as it streams (`invoke NAME --stream`). Exit status: 1 when the run ended failed or canceled.
 */
import { ApiError, type Connection, follow, listPages, request } from "./api.ts";
import { duration, eventLine, queueNote, runSummary, status, table } from "./render.ts";
import { need, type Out, UsageError } from "./usage.ts";

const FINISHED_BAD = new Set(["failed", "canceled"]);

/** Prints a run (or its JSON) and returns the exit status its outcome means. */
export function showRun(out: Out, e: Record<string, unknown>): number {
  out.print(out.json ? JSON.stringify(e, null, 2) : runSummary(out.paint, e));
  return FINISHED_BAD.has(String(e.status)) ? 1 : 0;
}

export function showAccepted(out: Out, body: Record<string, unknown>): number {
  out.print(
    out.json
      ? JSON.stringify(body, null, 2)
      : `accepted: run ${body.run_id}${body.rerun_of ? ` (re-run of ${body.rerun_of})` : ""}`,
  );
  return 0;
}

export interface Options {
  workflow?: string;
  status?: string;
  compensation?: string;
  /** `--search KEY=VALUE`, as often as needed (docs/http-api.md, "Search keys"). */
  search?: string[];
  limit?: string;
  all?: boolean;
  from?: string;
  current?: boolean;
}

export async function runs(
  conn: Connection,
  out: Out,
  args: string[],
  values: Options,
  wait: number | null,
): Promise<number> {
  const [sub, ...positionals] = args;
  const id = () => encodeURIComponent(need(positionals, 1, "run ID")[0] as string);
  switch (sub) {
    case "list": {
      need(positionals, 0, "argument");
      if (!values.workflow) throw new UsageError("runs list needs --workflow NAME");
      const search: Record<string, string> = {};
      for (const pair of values.search ?? []) {
        const eq = pair.indexOf("=");
        if (eq <= 0) throw new UsageError(`--search takes KEY=VALUE, not "${pair}"`);
        search[`search.${pair.slice(0, eq)}`] = pair.slice(eq + 1);
      }
      const { items, json, more } = await listPages(
        conn,
        "/runs",
        {
          workflow: values.workflow,
          status: values.status,
          compensation: values.compensation,
          ...search,
          limit: values.limit,
        },
        "runs",
        values.all === true,
      );
      if (out.json) {
        out.print(JSON.stringify(json, null, 2));
        return 0;
      }
      const listed = items as Array<Record<string, string | null>>;
      // A queued run's entry does not say why it waits: its envelope does (the first 20 of them).
      const queued = listed.filter((r) => r.status === "queued").slice(0, 20);
      const why = new Map(
        await Promise.all(
          queued.map(async (r) => {
            const e = await request(conn, "GET", `/runs/${encodeURIComponent(String(r.run_id))}`).catch(
              () => null,
            );
            return [String(r.run_id), e ? queueNote(e.body as Record<string, unknown>) : ""] as const;
          }),
        ),
      );
      const waiting = [...why.values()].some(Boolean);
      const rows = [["RUN", "STATUS", "CREATED", "DURATION", ...(waiting ? ["WAITING"] : [])]];
      for (const r of listed) {
        const d = r.finished_at ? Date.parse(r.finished_at) - Date.parse(String(r.created_at)) : null;
        const note = why.get(String(r.run_id)) ?? "";
        rows.push([
          String(r.run_id),
          status(out.paint, String(r.status)),
          String(r.created_at),
          duration(d),
          ...(waiting ? [out.paint("dim", note)] : []),
        ]);
      }
      out.print(listed.length === 0 ? "no runs" : table(rows));
      if (more) out.print(out.paint("dim", "(more: --all)"));
      return 0;
    }
    case "get":
      return showRun(out, (await request(conn, "GET", `/runs/${id()}`)).body as Record<string, unknown>);
    case "tail": {
      let end = "running";
      await follow(conn, `/runs/${id()}/events`, (type, data) => {
        if (type === "run.completed") end = String(data.status);
        out.print(out.json ? JSON.stringify({ type, ...data }) : eventLine(out.paint, type, data));
      });
      return FINISHED_BAD.has(end) ? 1 : 0;
    }
    case "cancel": {
      const e = (await request(conn, "POST", `/runs/${id()}/cancel`)).body as Record<string, unknown>;
      out.print(out.json ? JSON.stringify(e, null, 2) : `canceled: run ${e.run_id}`);
      return 0;
    }
    case "compensate": {
      const r = (await request(conn, "POST", `/runs/${id()}/compensate`)).body as Record<string, unknown>;
      const n = Number(r.retried);
      out.print(
        out.json
          ? JSON.stringify(r, null, 2)
          : `retrying ${n} failed compensation${n === 1 ? "" : "s"} of run ${r.run_id}`,
      );
      return 0;
    }
    case "rerun": {
      const body: Record<string, unknown> = {};
      if (values.from) body.from = values.from;
      if (values.current) body.definition = "current";
      const headers: Record<string, string> = wait !== null ? { prefer: `wait=${wait}` } : {};
      const res = await request(conn, "POST", `/runs/${id()}/rerun`, { body, headers }).catch((e) => {
        // The API's hint names the body's field; here it is an option.
        if (e instanceof ApiError && e.code === "nothing_to_rerun")
          throw new ApiError(
            e.code,
            "the run completed: name a step to re-run from (--from STEP)",
            e.status,
            e.body,
          );
        throw e;
      });
      const b = res.body as Record<string, unknown>;
      return res.status === 202 ? showAccepted(out, b) : showRun(out, b);
    }
    case "delete": {
      await request(conn, "DELETE", `/runs/${id()}`);
      out.print(out.json ? "{}" : "deleted");
      return 0;
    }
    default:
      throw new UsageError(
        sub
          ? `unknown runs command "${sub}"`
          : "runs needs a command (list, get, tail, cancel, compensate, rerun, delete)",
      );
  }
}

/**
 * `invoke NAME --stream`: the run as it goes (docs/http-api.md, "Streaming"): a streaming step's
 * answer as it is written, then the run's end; `--json`: every event as one JSON line.
 */
export async function streamInvoke(
  conn: Connection,
  out: Out,
  name: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<number> {
  let end = "running";
  let open = false;
  await follow(
    conn,
    `/invoke/${encodeURIComponent(name)}`,
    (type, data) => {
      if (out.json) return out.write(`${JSON.stringify({ type, ...data })}\n`);
      if (type === "output.delta") {
        open = true;
        return out.write(String(data.text ?? ""));
      }
      if (type === "output.reset")
        return out.write(`${open ? "\n" : ""}${out.paint("dim", "(the answer starts again)")}\n`);
      if (type === "run.completed") {
        end = String(data.status);
        out.write(`${open ? "\n" : ""}${eventLine(out.paint, type, data)}\n`);
      }
    },
    { body, headers },
  );
  return FINISHED_BAD.has(end) ? 1 : 0;
}
