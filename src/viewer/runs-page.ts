/**
 * The run list page (GET /view/runs?workflow=NAME[&status=S][&limit=N]): a workflow's runs,
 * newest first, from GET /runs, each linking to its viewer, page by page (the API's opaque
 * cursor; "Newer" goes back through the cursors already seen) and filtered by status. It lives
 * under /view/ rather than /runs/view because /runs/{id} already owns every one-segment path
 * below /runs.
 *
 * Elements tests rely on: `#runs tr[data-run]` (with `data-status`) and its link to the viewer,
 * `#status-filter`, `#limit-input`, `#older`, `#newer`, `#page-number`, and the workflow's Run form
 * (`details.run form.run-form`, run-form.ts). Its scores (docs/http-api.md, "Scores"): `#scores`
 * with `#score-table tr[data-scorer][data-arm]`, `#score-comparisons tr[data-arm]` (with
 * `data-significant`) and one chart per scorer in `#score-charts` (`svg[data-scorer]`, drawn by the
 * server: score-chart.ts).
 */
import { RUNS_PAGE_SCRIPT } from "../generated/viewer-scripts.ts";
import { htmlResponse } from "./page-shell.ts";

const BODY = `<header>
  <h1>Runs <span id="workflow-title" class="muted"></span></h1>
  <form id="workflow-form" class="summary">
    <label>Workflow <input id="workflow-input" name="workflow" autocomplete="off" spellcheck="false" required></label>
    <label>Status <select id="status-filter" name="status">
      <option value="">any</option>
      <option value="queued">queued</option>
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
RUN_FORM
<div id="notice" class="notice" hidden></div>
<table id="runs">
  <thead><tr><th>Run</th><th>Status</th><th>Created</th><th>Finished</th><th class="num">Duration</th></tr></thead>
  <tbody></tbody>
</table>
<nav class="summary" aria-label="Pages">
  <button type="button" id="newer" disabled>&larr; Newer</button>
  <span id="page-number" class="muted"></span>
  <button type="button" id="older" disabled>Older &rarr;</button>
</nav>
<section id="scores" hidden>
  <h2>Scores <span class="muted">over the last 24 hours</span></h2>
  <table id="score-table">
    <thead><tr><th>Step</th><th>Scorer</th><th>Version</th><th>Arm</th><th class="num">Runs</th><th class="num">Mean</th><th class="num">p10</th><th class="num">p50</th><th class="num">p90</th></tr></thead>
    <tbody></tbody>
  </table>
  <table id="score-comparisons" hidden>
    <thead><tr><th>Step</th><th>Scorer</th><th>Arm</th><th>Against</th><th class="num">Difference</th><th>95 % interval</th><th></th></tr></thead>
    <tbody></tbody>
  </table>
  <div id="score-charts"></div>
</section>`;

/** The page; `runForm`: the Run form of the workflow the query names (run-form.ts), or "". */
export function runsPage(runForm = ""): Response {
  const form = runForm ? `<details class="run"><summary>Run this workflow</summary>${runForm}</details>` : "";
  return htmlResponse({ title: "Runs", body: BODY.replace("RUN_FORM", form), script: RUNS_PAGE_SCRIPT });
}
