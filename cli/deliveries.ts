/**
 * `workflow-edge deliveries list | retry | recover` (docs/cli.md): a workflow's deliveries (its
 * notifications and approval requests) and their replay, through `GET /deliveries`,
 * `POST /deliveries/{id}/retry` and `POST /deliveries/recover` (docs/http-api.md, "Deliveries").
 */
import { type Connection, listPages, request } from "./api.ts";
import { status, table } from "./render.ts";
import { need, type Out, UsageError } from "./usage.ts";

interface Delivery {
  id: string;
  run_id: string;
  type: string;
  state: string;
  attempts: Array<{ at: string; status: number | null; error: string | null }>;
  next_attempt_at: string | null;
}

export async function deliveries(
  conn: Connection,
  out: Out,
  args: string[],
  values: { workflow?: string; state?: string; since?: string; limit?: string; all?: boolean },
): Promise<number> {
  const [sub, ...rest] = args;
  switch (sub) {
    case "list": {
      need(rest, 0, "argument");
      if (!values.workflow) throw new UsageError("deliveries list needs --workflow NAME");
      const { items, json, more } = await listPages(
        conn,
        "/deliveries",
        { workflow: values.workflow, state: values.state, limit: values.limit },
        "deliveries",
        values.all === true,
      );
      if (out.json) {
        out.print(JSON.stringify(json, null, 2));
        return 0;
      }
      const all = items as Delivery[];
      const rows = [["DELIVERY", "TYPE", "STATE", "ATTEMPTS", "LAST", "NEXT"]];
      for (const d of all) {
        const lastAttempt = d.attempts[d.attempts.length - 1];
        rows.push([
          d.id,
          d.type,
          status(out.paint, d.state),
          String(d.attempts.length),
          lastAttempt ? (lastAttempt.error ?? String(lastAttempt.status)) : "",
          d.next_attempt_at ?? "",
        ]);
      }
      out.print(all.length === 0 ? "no deliveries" : table(rows));
      if (more) out.print(out.paint("dim", "(more: --all)"));
      return 0;
    }
    case "retry": {
      const [id] = need(rest, 1, "delivery ID");
      const r = (await request(conn, "POST", `/deliveries/${encodeURIComponent(id as string)}/retry`))
        .body as {
        id: string;
        state: string;
      };
      out.print(out.json ? JSON.stringify(r, null, 2) : `retrying: delivery ${r.id}`);
      return 0;
    }
    case "recover": {
      need(rest, 0, "argument");
      if (!values.workflow || !values.since)
        throw new UsageError(
          "deliveries recover needs --workflow NAME --since T (e.g. 2026-11-25T10:00:00Z)",
        );
      const q = new URLSearchParams({ workflow: values.workflow, since: values.since });
      const r = (await request(conn, "POST", `/deliveries/recover?${q}`)).body as { recovered: number };
      out.print(
        out.json ? JSON.stringify(r, null, 2) : `recovered: ${r.recovered} failed deliveries attempted again`,
      );
      return 0;
    }
    default:
      throw new UsageError(
        sub ? `unknown deliveries command "${sub}"` : "missing deliveries command (list, retry, recover)",
      );
  }
}
