/**
 * The run list page (GET /view/runs?workflow=NAME[&status=S][&limit=N]): a workflow's runs,
 * newest first, from GET /runs, each linking to its viewer, page by page (the API's opaque
 * cursor; "Newer" goes back through the cursors already seen) and filtered by status. It lives
 * under /view/ rather than /runs/view because /runs/{id} already owns every one-segment path
 * below /runs.
 *
 * Elements tests rely on: `#runs tr[data-run]` (with `data-status`) and its link to the viewer,
 * `#status-filter`, `#limit-input`, `#older`, `#newer`, `#page-number`.
 */
import { htmlResponse } from "./page-shell.ts";

const BODY = `<header>
  <h1>Runs <span id="workflow-title" class="muted"></span></h1>
  <form id="workflow-form" class="summary">
    <label>Workflow <input id="workflow-input" name="workflow" autocomplete="off" spellcheck="false" required></label>
    <label>Status <select id="status-filter" name="status">
      <option value="">any</option>
      <option value="pending">pending</option>
      <option value="running">running</option>
      <option value="complete">complete</option>
      <option value="failed">failed</option>
      <option value="canceled">canceled</option>
    </select></label>
    <label>Per page <input id="limit-input" name="limit" type="number" min="1" max="100" value="20"></label>
    <button type="submit">Show runs</button>
    <button type="button" id="refresh">Refresh</button>
  </form>
</header>
<div id="notice" class="notice" hidden></div>
<table id="runs">
  <thead><tr><th>Run</th><th>Status</th><th>Created</th><th>Finished</th><th class="num">Duration</th></tr></thead>
  <tbody></tbody>
</table>
<nav class="summary" aria-label="Pages">
  <button type="button" id="newer" disabled>&larr; Newer</button>
  <span id="page-number" class="muted"></span>
  <button type="button" id="older" disabled>Older &rarr;</button>
</nav>`;

const SCRIPT = `
const query = new URLSearchParams(location.search);
const workflowInput = document.getElementById("workflow-input");
const statusFilter = document.getElementById("status-filter");
const limitInput = document.getElementById("limit-input");
const olderButton = document.getElementById("older");
const newerButton = document.getElementById("newer");
workflowInput.value = query.get("workflow") || "";
statusFilter.value = query.get("status") || "";
if (query.get("limit")) limitInput.value = query.get("limit");

/** The cursors of the pages seen so far: pages[0] is the newest (no cursor). */
let pages = [null];
let nextCursor = null;
let refreshTimer;

function limit() {
  const n = parseInt(limitInput.value, 10);
  return Math.min(100, Math.max(1, isFinite(n) ? n : 20));
}

function showFirstPage() {
  const q = new URLSearchParams({ workflow: workflowInput.value.trim() });
  if (statusFilter.value) q.set("status", statusFilter.value);
  if (limit() !== 20) q.set("limit", String(limit()));
  history.replaceState(null, "", location.pathname + "?" + q.toString());
  pages = [null];
  loadRuns();
}

document.getElementById("workflow-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  showFirstPage();
});
statusFilter.addEventListener("change", () => { if (workflowInput.value.trim()) showFirstPage(); });
document.getElementById("refresh").addEventListener("click", () => loadRuns());
olderButton.addEventListener("click", () => {
  if (!nextCursor) return;
  pages.push(nextCursor);
  loadRuns();
});
newerButton.addEventListener("click", () => {
  if (pages.length < 2) return;
  pages.pop();
  loadRuns();
});

function durationOf(r) {
  const start = Date.parse(r.created_at);
  const end = r.finished_at ? Date.parse(r.finished_at) : Date.now();
  return isFinite(start) && isFinite(end) ? Math.max(0, end - start) : null;
}

async function loadRuns() {
  const name = workflowInput.value.trim();
  if (!name) { showNotice("Enter a workflow name."); return; }
  clearTimeout(refreshTimer);
  document.getElementById("workflow-title").textContent = name;
  document.title = "Runs of " + name;
  const q = new URLSearchParams({ workflow: name, limit: String(limit()) });
  if (statusFilter.value) q.set("status", statusFilter.value);
  const cursor = pages[pages.length - 1];
  if (cursor) q.set("cursor", cursor);
  const res = await apiFetch("/runs?" + q.toString());
  const tbody = document.querySelector("#runs tbody");
  if (!res.ok) {
    showNotice(await problemText(res), "error");
    tbody.replaceChildren();
    nextCursor = null;
    olderButton.disabled = true;
    newerButton.disabled = pages.length < 2;
    return;
  }
  const list = await res.json();
  nextCursor = list.next_cursor;
  olderButton.disabled = !nextCursor;
  newerButton.disabled = pages.length < 2;
  document.getElementById("page-number").textContent = "Page " + pages.length;
  const filtered = statusFilter.value ? " " + statusFilter.value : "";
  showNotice(list.runs.length === 0 ? (pages.length > 1 ? "No older" + filtered + " runs." : "No" + filtered + " runs yet.") : "");
  // While a run on this page is still going, keep the page current.
  if (list.runs.some((r) => r.status === "pending" || r.status === "running")) refreshTimer = setTimeout(loadRuns, 3000);
  tbody.replaceChildren(...list.runs.map((r) => {
    const link = el("a", { class: "mono", href: "/runs/" + encodeURIComponent(r.run_id) + "/view" }, r.run_id.slice(0, 16) + "…");
    return el("tr", { "data-run": r.run_id, "data-status": r.status },
      el("td", null, link),
      el("td", null, el("span", { class: "status", "data-status": r.status }, r.status)),
      el("td", null, formatTime(r.created_at)),
      el("td", null, formatTime(r.finished_at)),
      el("td", { class: "num" }, formatMs(durationOf(r))));
  }));
}

if (workflowInput.value) loadRuns().catch((err) => showNotice(String(err && err.message ? err.message : err), "error"));
`;

export function runsPage(): Response {
  return htmlResponse({ title: "Runs", body: BODY, script: SCRIPT });
}
