/**
 * The run list page (GET /view/runs?workflow=NAME): a workflow's recent runs, newest first, from
 * GET /runs?workflow=NAME, each linking to its viewer. It lives under /view/ rather than
 * /runs/view because /runs/{id} already owns every one-segment path below /runs.
 *
 * Elements tests rely on: `#runs tr[data-run]` (with `data-status`) and its link to the viewer.
 */
import { htmlResponse } from "./page-shell.ts";

const BODY = `<header>
  <h1>Runs <span id="workflow-title" class="muted"></span></h1>
  <form id="workflow-form" class="summary">
    <label>Workflow <input id="workflow-input" name="workflow" autocomplete="off" spellcheck="false" required></label>
    <label>Show <input id="limit-input" name="limit" type="number" min="1" max="500" value="50"></label>
    <button type="submit">Show runs</button>
    <button type="button" id="refresh">Refresh</button>
  </form>
</header>
<div id="notice" class="notice" hidden></div>
<table id="runs">
  <thead><tr><th>Run</th><th>Status</th><th>Created</th><th>Finished</th><th class="num">Duration</th><th class="num">Tokens in / out</th><th class="num">Cost</th><th>Error</th></tr></thead>
  <tbody></tbody>
</table>`;

const SCRIPT = `
const query = new URLSearchParams(location.search);
const workflowInput = document.getElementById("workflow-input");
const limitInput = document.getElementById("limit-input");
workflowInput.value = query.get("workflow") || "";
if (query.get("limit")) limitInput.value = query.get("limit");

document.getElementById("workflow-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = new URLSearchParams({ workflow: workflowInput.value.trim(), limit: limitInput.value || "50" });
  history.replaceState(null, "", location.pathname + "?" + q.toString());
  loadRuns();
});
document.getElementById("refresh").addEventListener("click", () => loadRuns());

let refreshTimer;

async function loadRuns() {
  const name = workflowInput.value.trim();
  if (!name) { showNotice("Enter a workflow name."); return; }
  document.getElementById("workflow-title").textContent = name;
  document.title = "Runs of " + name;
  const limit = Math.max(1, parseInt(limitInput.value, 10) || 50);
  const res = await apiFetch("/runs?workflow=" + encodeURIComponent(name) + "&limit=" + limit);
  if (!res.ok) {
    showNotice(await problemText(res), "error");
    document.querySelector("#runs tbody").replaceChildren();
    return;
  }
  const list = await res.json();
  showNotice(list.runs.length === 0 ? "No runs yet." : "");
  // While a run is still going, keep its row current.
  clearTimeout(refreshTimer);
  if (list.runs.some((r) => r.status === "pending" || r.status === "running")) refreshTimer = setTimeout(loadRuns, 3000);
  document.querySelector("#runs tbody").replaceChildren(...list.runs.map((r) => {
    const t = r.totals || {};
    const link = el("a", { class: "mono", href: "/runs/" + encodeURIComponent(r.run_id) + "/view" }, r.run_id.slice(0, 16) + "…");
    return el("tr", { "data-run": r.run_id, "data-status": r.status },
      el("td", null, link),
      el("td", null, el("span", { class: "status", "data-status": r.status }, r.status)),
      el("td", null, formatTime(r.created_at)),
      el("td", null, formatTime(r.finished_at)),
      el("td", { class: "num" }, formatMs(t.duration_ms)),
      el("td", { class: "num" }, (t.tokens_in || 0) + " / " + (t.tokens_out || 0)),
      el("td", { class: "num" }, formatUsd(t.cost_usd || 0)),
      el("td", null, r.error ? r.error.code + (r.error.step ? " at " + r.error.step : "") : ""));
  }));
}

if (workflowInput.value) loadRuns().catch((err) => showNotice(String(err && err.message ? err.message : err), "error"));
`;

export function runsPage(): Response {
  return htmlResponse({ title: "Runs", body: BODY, script: SCRIPT });
}
