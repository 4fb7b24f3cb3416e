/**
 * The workflow-wide view of deliveries (docs/http-api.md, "Deliveries"), once the route has found
 * the workflow and checked the caller's credentials: `GET /deliveries` and
 * `POST /deliveries/recover`. Deliveries live in their run's object (src/run/deliveries/deliveries.ts); the
 * run listing knows which runs have any and which have failed ones (each run reports the counts
 * with its listing entry, after its answer), so these read only those runs' objects and the invoke
 * path contacts nothing more.
 *
 * Order: by their run, newest run first, and within a run newest delivery first. The cursor is a
 * run listing position and how many deliveries of the next run were already shown, bound to the
 * workflow and the state filter, with a checksum (as the run listing's: run-list.ts).
 */

import type { CompiledWorkflow } from "../bundle.ts";
import type { PublicDelivery } from "../run/deliveries/deliveries.ts";
import type { DeliveryState } from "../run/deliveries/delivery-rules.ts";
import { parseRunId, residencyOf } from "../run/jurisdiction.ts";
import { type EntryFilter, type ListedRun, listRuns, type Position } from "../run/listing/listing.ts";
import { runStub } from "../run/run-rpc.ts";
import { bad, base64url, checksum, fromBase64url, parseDateTime, parseLimit, single } from "./run-list.ts";

const STATES: readonly DeliveryState[] = ["pending", "delivered", "failed"];
const CURSOR_DOMAIN = "delivery-list-cursor";
/** Listing pages one request reads at most (a short page then carries a cursor). */
const MAX_LISTING_PAGES = 10;

interface Cursor {
  at: Position | null;
  /** Deliveries of the run after `at` already shown. */
  skip: number;
}

export function parseState(raw: string | null): DeliveryState | null {
  if (raw === null) return null;
  if (!(STATES as readonly string[]).includes(raw)) throw bad(`state must be one of ${STATES.join(", ")}`);
  return raw as DeliveryState;
}

/** `since`: an RFC 3339 date-time (`2026-11-25T10:00:00Z`); epoch ms. */
export function parseSince(raw: string | null): number {
  if (raw === null) throw bad("since is required (an RFC 3339 date-time, e.g. 2026-11-25T10:00:00Z)");
  return parseDateTime("since", raw);
}

async function encodeCursor(workflow: string, state: DeliveryState | null, c: Cursor): Promise<string> {
  const body = { w: workflow, s: state, t: c.at?.t ?? null, i: c.at?.id ?? null, k: c.skip };
  const payload = base64url(new TextEncoder().encode(JSON.stringify(body)));
  return `${payload}.${await checksum(payload, CURSOR_DOMAIN)}`;
}

async function decodeCursor(raw: string, workflow: string, state: DeliveryState | null): Promise<Cursor> {
  const invalid = bad("cursor is not a cursor of this listing (pass next_cursor back unchanged)");
  const [payload, sum, ...rest] = raw.split(".");
  if (payload === undefined || sum === undefined || rest.length > 0 || raw.length > 1024) throw invalid;
  if ((await checksum(payload, CURSOR_DOMAIN)) !== sum) throw invalid;
  let body: { w?: unknown; s?: unknown; t?: unknown; i?: unknown; k?: unknown };
  try {
    body = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(
        fromBase64url(payload) ?? new Uint8Array(),
      ),
    );
  } catch {
    throw invalid;
  }
  const { t, i, k } = body;
  const at =
    t === null && i === null
      ? null
      : typeof t === "number" && Number.isSafeInteger(t) && typeof i === "string" && parseRunId(i) !== null
        ? { t, id: i }
        : undefined;
  if (at === undefined || typeof k !== "number" || !Number.isSafeInteger(k) || k < 0) throw invalid;
  if (body.w !== workflow) throw bad("cursor belongs to another workflow's listing");
  if ((body.s ?? null) !== state) throw bad("cursor was made with another state filter");
  return { at, skip: k };
}

/** One run's deliveries in the state asked for, newest first ([] when its object has none left). */
async function deliveriesOf(
  env: Env,
  run: ListedRun,
  state: DeliveryState | null,
): Promise<PublicDelivery[]> {
  const all = (await runStub(env, run.run_id)?.deliveries()) ?? [];
  return all
    .filter((d) => state === null || d.state === state)
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || (a.id < b.id ? 1 : -1));
}

const positionOf = (run: ListedRun): Position => ({ t: Date.parse(run.created_at), id: run.run_id });

/** `GET /deliveries?workflow=NAME[&state=S][&limit=N][&cursor=C]`. */
export async function deliveryListPage(
  env: Env,
  wf: CompiledWorkflow,
  query: URLSearchParams,
): Promise<{ deliveries: PublicDelivery[]; next_cursor: string | null }> {
  const workflow = wf.name;
  const residency = residencyOf(wf);
  const limit = parseLimit(single(query, "limit"));
  const state = parseState(single(query, "state"));
  const raw = single(query, "cursor");
  const cursor = raw === null ? { at: null, skip: 0 } : await decodeCursor(raw, workflow, state);
  const filter: EntryFilter = state === "failed" ? "failed" : "any";
  const out: PublicDelivery[] = [];
  let { at, skip } = cursor;
  for (let pages = 0; pages < MAX_LISTING_PAGES; pages++) {
    const page = await listRuns(env, {
      workflow,
      residency,
      status: null,
      limit,
      after: at,
      deliveries: filter,
    });
    const each = await Promise.all(page.runs.map((r) => deliveriesOf(env, r, state)));
    for (const [n, run] of page.runs.entries()) {
      const mine = (each[n] as PublicDelivery[]).slice(skip);
      const room = limit - out.length;
      if (mine.length > room) {
        out.push(...mine.slice(0, room));
        return {
          deliveries: out,
          next_cursor: await encodeCursor(workflow, state, { at, skip: skip + room }),
        };
      }
      out.push(...mine);
      skip = 0;
      at = positionOf(run);
      if (out.length === limit) {
        const more = n < page.runs.length - 1 || page.next !== null;
        return {
          deliveries: out,
          next_cursor: more ? await encodeCursor(workflow, state, { at, skip: 0 }) : null,
        };
      }
    }
    if (page.next === null) return { deliveries: out, next_cursor: null };
    at = page.next;
  }
  return { deliveries: out, next_cursor: await encodeCursor(workflow, state, { at, skip }) };
}

/** `POST /deliveries/recover?workflow=NAME&since=T`: each failed delivery created at or after T once more. */
export async function recoverDeliveries(env: Env, wf: CompiledWorkflow, since: number): Promise<number> {
  const workflow = wf.name;
  const residency = residencyOf(wf);
  let recovered = 0;
  let at: Position | null = null;
  for (;;) {
    const page = await listRuns(env, {
      workflow,
      residency,
      status: null,
      limit: 100,
      after: at,
      deliveries: "failed",
    });
    // A run finished before `since` made its deliveries before it (approval requests, its notifications).
    const candidates = page.runs.filter((r) => r.finished_at === null || Date.parse(r.finished_at) >= since);
    const counts = await Promise.all(
      candidates.map((r) => runStub(env, r.run_id)?.recoverDeliveries(since) ?? Promise.resolve(0)),
    );
    recovered += counts.reduce((a, b) => a + b, 0);
    if (page.next === null) return recovered;
    at = page.next;
  }
}
