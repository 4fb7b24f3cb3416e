/**
 * `GET /runs?workflow=NAME[&status=S][&limit=N][&cursor=C]` (docs/http-api.md) once the route has
 * found the workflow and checked the caller's credentials: the query is checked (every problem
 * is a 400 `invalid_query`, never a 500), then one page comes from the run listing
 * (src/run/listing/listing.ts).
 *
 * The cursor is opaque to clients: base64url of the position where the next page starts, bound
 * to the workflow and status filter it was made for, with a checksum, so that a truncated,
 * edited or foreign cursor is refused instead of silently listing from somewhere else. It is a
 * position, not a credential: the caller's access was checked before.
 */
import type { CompiledWorkflow } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import type { RunStatus } from "../engine/types.ts";
import { parseRunId, residencyOf } from "../run/jurisdiction.ts";
import { type ListedRun, listRuns, type Position } from "../run/listing/listing.ts";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
const STATUSES: readonly RunStatus[] = ["queued", "pending", "running", "complete", "failed", "canceled"];

export interface RunListBody {
  runs: ListedRun[];
  next_cursor: string | null;
}

interface CursorBody {
  /** workflow, status filter, position; the compensation and search filters when given */
  w: string;
  s: RunStatus | null;
  t: number;
  i: string;
  c?: "failed";
  q?: Record<string, string>;
}

export function bad(detail: string): HttpProblem {
  return new HttpProblem("invalid_query", detail);
}

/** The single value of a query parameter; a repeated one is ambiguous and refused. */
export function single(query: URLSearchParams, name: string): string | null {
  const all = query.getAll(name);
  if (all.length > 1) throw bad(`${name} is given ${all.length} times`);
  return all[0] ?? null;
}

/** An RFC 3339 date-time (`2026-11-25T10:00:00Z`) given as query parameter `name`, as epoch ms. */
export function parseDateTime(name: string, raw: string): number {
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(raw);
  const t = ok ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(t)) throw bad(`${name} must be an RFC 3339 date-time, e.g. 2026-11-25T10:00:00Z`);
  return t;
}

/** The `workflow` parameter: required, and given once (a second one could name another workflow). */
export function workflowParam(query: URLSearchParams): string {
  const name = single(query, "workflow");
  if (!name) throw bad("workflow is required (GET /runs?workflow=NAME)");
  return name;
}

export function parseLimit(raw: string | null): number {
  if (raw === null) return DEFAULT_LIMIT;
  const n = /^[0-9]{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw bad(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

export function parseStatus(raw: string | null): RunStatus | null {
  if (raw === null) return null;
  if (!(STATUSES as readonly string[]).includes(raw)) {
    throw bad(`status must be one of ${STATUSES.join(", ")}`);
  }
  return raw as RunStatus;
}

export function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(bin, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

/** A cursor's checksum; `domain` keeps one listing's cursors out of another's. */
export async function checksum(payload: string, domain = "run-list-cursor"): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${domain}\n${payload}`));
  return base64url(new Uint8Array(digest).slice(0, 12));
}

export async function encodeCursor(
  workflow: string,
  status: RunStatus | null,
  at: Position,
  compensation: "failed" | null = null,
  search: Record<string, string> | null = null,
): Promise<string> {
  const body: CursorBody = {
    w: workflow,
    s: status,
    t: at.t,
    i: at.id,
    ...(compensation ? { c: compensation } : {}),
    ...(search ? { q: search } : {}),
  };
  const payload = base64url(new TextEncoder().encode(JSON.stringify(body)));
  return `${payload}.${await checksum(payload)}`;
}

export async function decodeCursor(
  raw: string,
  workflow: string,
  status: RunStatus | null,
  compensation: "failed" | null = null,
  search: Record<string, string> | null = null,
): Promise<Position> {
  const invalid = bad("cursor is not a cursor of this listing (pass next_cursor back unchanged)");
  const [payload, sum, ...rest] = raw.split(".");
  if (payload === undefined || sum === undefined || rest.length > 0 || raw.length > 1024) throw invalid;
  if ((await checksum(payload)) !== sum) throw invalid;
  const bytes = fromBase64url(payload);
  let body: Partial<CursorBody>;
  try {
    body = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes ?? new Uint8Array()),
    ) as Partial<CursorBody>;
  } catch {
    throw invalid;
  }
  const t = body.t;
  const id = body.i;
  if (
    typeof t !== "number" ||
    !Number.isSafeInteger(t) ||
    t < 0 ||
    typeof id !== "string" ||
    (id !== "" && parseRunId(id) === null)
  ) {
    throw invalid;
  }
  if (body.w !== workflow) throw bad("cursor belongs to another workflow's listing");
  if ((body.s ?? null) !== status) throw bad("cursor was made with another status filter");
  if ((body.c ?? null) !== compensation) throw bad("cursor was made with another compensation filter");
  if (JSON.stringify(body.q ?? null) !== JSON.stringify(search))
    throw bad("cursor was made with other search values");
  return { t, id };
}

/** One page of `workflow`'s runs for the query string of GET /runs. */
export async function runListPage(
  env: Env,
  wf: CompiledWorkflow,
  query: URLSearchParams,
): Promise<RunListBody> {
  const workflow = wf.name;
  const limit = parseLimit(single(query, "limit"));
  const status = parseStatus(single(query, "status"));
  const compensation = parseCompensation(single(query, "compensation"));
  const search = parseSearch(wf, query);
  const rawCursor = single(query, "cursor");
  const after =
    rawCursor === null ? null : await decodeCursor(rawCursor, workflow, status, compensation, search);
  const page = await listRuns(env, {
    workflow,
    residency: residencyOf(wf),
    status,
    limit,
    after,
    deliveries: compensation === "failed" ? "compensation_failed" : null,
    search,
  });
  return {
    runs: page.runs,
    next_cursor: page.next ? await encodeCursor(workflow, status, page.next, compensation, search) : null,
  };
}

/**
 * `search.<key>=<value>` (docs/http-api.md, "Search keys"): only the runs with those values, each
 * key one the workflow declares under `search:` (400 `invalid_query` otherwise), and
 * `score.<name>.lt|gte=<0..1>` (only the runs with a score of that name below, or at least, it);
 * keys sorted, so the same filter makes the same cursor. Null: no filter.
 */
export function parseSearch(wf: CompiledWorkflow, query: URLSearchParams): Record<string, string> | null {
  const declared = Object.keys(wf.search ?? {});
  const out: Record<string, string> = {};
  for (const name of [...new Set(query.keys())].filter((k) => k.startsWith("search.")).sort()) {
    const key = name.slice("search.".length);
    if (!declared.includes(key)) {
      throw bad(
        declared.length === 0
          ? `${wf.name} declares no search keys (\`search:\` in its file)`
          : `\`${key}\` is not a search key of ${wf.name} (declared: ${declared.join(", ")})`,
      );
    }
    out[key] = single(query, name) as string;
  }
  // `score.<name>.lt=X` / `score.<name>.gte=X` (docs/http-api.md, "Scores"): runs by a score.
  for (const name of [...new Set(query.keys())].filter((k) => k.startsWith("score.")).sort()) {
    const m = /^score\.([A-Za-z0-9_]{1,64})\.(lt|gte)$/.exec(name);
    if (!m) throw bad(`\`${name}\` is not a score filter (score.<scorer>.lt or score.<scorer>.gte)`);
    const value = single(query, name) as string;
    if (!/^(0(\.\d+)?|1(\.0+)?)$/.test(value)) throw bad(`\`${name}\` takes a number from 0 to 1`);
    out[name] = value;
  }
  return Object.keys(out).length > 0
    ? Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
    : null;
}

/** `compensation=failed` (docs/http-api.md): only runs whose compensation failed. */
export function parseCompensation(raw: string | null): "failed" | null {
  if (raw === null) return null;
  if (raw !== "failed") throw bad("compensation must be failed (the runs whose compensation failed)");
  return "failed";
}
