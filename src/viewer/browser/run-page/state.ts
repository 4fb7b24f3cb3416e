/**
 * Every part of the run page (graph, timeline, details, actions, live events) reads the same run
 * and the same selection, and any change to them must redraw the whole page: the run as the page
 * knows it (its envelope, graph nodes and step records), the selected step, and how both change
 * live in this one module, so no part keeps a copy that goes stale.
 */
import { apiFetch, problemText } from "../common.ts";

const parts = location.pathname.split("/");
export const runId = decodeURIComponent(parts[2] || "");
export const runPath = `/runs/${encodeURIComponent(runId)}`;
const ACTIVE = new Set(["queued", "pending", "running"]);

export let envelope = null;
/** Graph nodes by slash path, in pipeline order (parents before children). */
export const nodes = new Map();
/** Step records by slash path (from the envelope, then from events). */
export const records = new Map();
/** A streaming step's answer so far (its `output.delta` events), by step path, until the step ends. */
export const streams = new Map<string, string>();
export let selected = null;

function flatten(steps, prefix) {
  for (const s of steps || []) {
    const path = prefix + s.id;
    records.set(path, s);
    flatten(s.steps, `${path}/`);
  }
}

export function isActive() {
  // A finished run whose compensations still run is followed until they have.
  return envelope && (ACTIVE.has(envelope.status) || envelope.compensation?.status === "running");
}

// ---- fan-out items -----------------------------------------------------------------------------

/** The started items of the fan-out step at path, by index: [[index, record], ...]. */
export function itemsOf(path) {
  const out = [];
  const prefix = `${path}/`;
  for (const [p, rec] of records) {
    if (!p.startsWith(prefix)) continue;
    const rest = p.slice(prefix.length);
    if (/^(0|[1-9][0-9]*)$/.test(rest)) out.push([Number(rest), rec]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/** The fan-out step of an item path (post/3 -> node post), or null. */
export function itemOwner(path) {
  const cut = path.lastIndexOf("/");
  if (cut < 0 || !/^(0|[1-9][0-9]*)$/.test(path.slice(cut + 1))) return null;
  const owner = nodes.get(path.slice(0, cut));
  return owner?.for_each ? owner : null;
}

export function itemBadge(path) {
  const items = itemsOf(path);
  const done = items.filter(([, r]) => r.status !== "running" && r.status !== "pending").length;
  const text = items.length === 1 ? "1 item" : `${items.length} items`;
  return { count: items.length, done, text: done < items.length ? `${text} · ${done} done` : text };
}

export function stepDuration(rec) {
  if (!rec?.started_at) return null;
  const end = rec.finished_at ? Date.parse(rec.finished_at) : Date.now();
  return Math.max(0, end - Date.parse(rec.started_at));
}

// ---- changes -----------------------------------------------------------------------------------

/** Draws every part of the page from this state: set by run-page.ts, which knows the parts. */
let drawPage: () => void = () => {};

export function setRender(draw: () => void): void {
  drawPage = draw;
}

/** Redraws the page after the state changed (a load, live events, a selection). */
export function render(): void {
  drawPage();
}

export function select(path) {
  selected = selected === path ? null : path;
  render();
}

export async function load() {
  const res = await apiFetch(runPath);
  if (!res.ok) throw Object.assign(new Error(await problemText(res)), { status: res.status });
  envelope = await res.json();
  records.clear();
  flatten(envelope.steps, "");
  render();
}
