/**
 * The run viewer page (GET /runs/{id}/view): the run's pipeline drawn as its dependency graph,
 * each step coloured by status, a timeline of step durations with tokens and cost, and a details
 * panel with a step's (masked) output, error and metrics. It loads the envelope and the graph
 * from the JSON API, then follows /runs/{id}/events, read with fetch() because EventSource cannot
 * send the credential header, so the page updates live without a reload.
 *
 * A fan-out step (`for_each`) is one node with an item count (`.items[data-items]`, started
 * items, and `data-items-done`); selected, the details panel lists its items in `#details-items`
 * (`tr[data-item="<index>"]` with status, duration and cost), and a row selects that item.
 *
 * Elements tests rely on: `[data-step="<path>"]` (a graph node, with `data-status` and
 * `data-kind`), `#run-status[data-status]`, `#timeline tr[data-step]`, `#details`
 * (`#details-output`, `#details-request` with the recorded request headers, `#details-error`,
 * `#details-items`), and `body[data-live]` ("open" while following events, "closed" after).
 * Approvals (docs/agents-and-tools.md): `#approvals` lists the run's approvals as `[data-approval="<id>"][data-status]`;
 * a pending one has a comment field (`.approval-comment`) and `button[data-decision="approved"]` /
 * `"rejected"`.
 * Compensation (docs/file-format.md): `#compensation` lists what a failed or canceled run undid,
 * `#compensate-run` tries the failed ones again.
 * Deliveries (docs/triggers.md): `#deliveries` lists the run's notifications and approval requests
 * as `[data-delivery="<id>"][data-state]`, each attempt an `li[data-attempt-status]`.
 * Recovering and waiting runs (docs/http-api.md, docs/file-format.md): `#cancel-run` on an active run, `#rerun-run` on a
 * finished one and `#rerun-from` on a selected step of a finished run (each asks for the
 * workflow's credentials like Approve does, then opens the new run); `#rerun-of` links the run
 * a re-run re-runs, and a reused step says `Reused from`; a waiting wait step for a signal shows
 * `#signal-form` (a JSON body and `#signal-send`).
 * Traces (docs/operations.md): `#trace-line` shows the run's trace id, `#trace-link` (linked to
 * the `TRACE_URL` var with `{trace_id}` filled in) when the var is set, `#trace-id` otherwise.
 */
import { RUN_PAGE_SCRIPT } from "../generated/viewer-scripts.ts";
import { htmlResponse } from "./page-shell.ts";

const BODY = `<header>
  <p class="muted"><a href="#" id="runs-link" hidden>All runs of this workflow</a></p>
  <h1><span id="workflow-name">Run</span> <span id="workflow-version" class="muted"></span></h1>
  <p class="mono muted" id="run-id"></p>
  <p class="mono muted" id="trace-line" data-trace-url="{TRACE_URL}" hidden>trace <a id="trace-link" rel="noopener noreferrer" target="_blank"></a><span id="trace-id"></span></p>
  <p id="run-status-line"><span id="run-status" class="status" data-status="pending">loading</span> <span id="live-state" class="muted"></span></p>
  <p class="run-actions" id="run-actions"><button type="button" id="cancel-run" hidden>Cancel run</button><button type="button" id="rerun-run" hidden>Re-run</button> <a id="rerun-of" href="#" hidden></a></p>
</header>
<div id="notice" class="notice" hidden></div>
<dl class="summary" id="summary"></dl>
<section id="approvals" class="approvals" aria-live="polite" hidden>
  <h2>Approvals</h2>
  <div id="approval-list"></div>
</section>
<section id="compensation" class="deliveries" hidden>
  <h2>Compensation <span id="compensation-status" class="status"></span> <button type="button" id="compensate-run" hidden>Retry failed compensations</button></h2>
  <ol id="compensation-list" class="attempts"></ol>
</section>
<section id="deliveries" class="deliveries" hidden>
  <h2>Deliveries</h2>
  <div id="delivery-list"></div>
</section>
<div class="layout">
  <main>
    <h2>Pipeline</h2>
    <div id="graph-root"></div>
    <h2>Timeline</h2>
    <table class="timeline" id="timeline">
      <thead><tr><th>Step</th><th>Status</th><th class="bar-cell">Time</th><th class="num">Duration</th><th class="num">Tokens in</th><th class="num">Tokens out</th><th class="num">Cost</th><th class="num">LLM calls</th><th class="num">Attempts</th></tr></thead>
      <tbody></tbody>
    </table>
  </main>
  <aside class="details" id="details" aria-live="polite">
    <h2 id="details-title">Run</h2>
    <dl id="details-fields"></dl>
    <div id="details-items-box" class="items-box" hidden>
      <h3 id="details-items-title">Items</h3>
      <table class="items-table" id="details-items">
        <thead><tr><th>Item</th><th>Status</th><th class="num">Duration</th><th class="num">Cost</th><th>Error</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <div id="step-actions" class="step-actions" hidden><button type="button" id="rerun-from">Re-run from this step</button></div>
    <form id="signal-form" class="signal-form" hidden>
      <h3 id="signal-title">Send the signal</h3>
      <textarea id="signal-body" aria-label="Signal body (JSON)">{}</textarea>
      <button type="submit" id="signal-send">Send signal</button>
    </form>
    <h3 id="details-output-title">Params</h3>
    <pre id="details-output"></pre>
    <h3 id="details-request-title" hidden>Request headers</h3>
    <pre id="details-request" hidden></pre>
    <h3>Error</h3>
    <pre id="details-error"></pre>
  </aside>
</div>`;

/**
 * The link to a run's trace in the operator's backend: the `TRACE_URL` var, an http(s) URL in
 * which `{trace_id}` stands for the run's trace id (docs/operations.md, "Traces"); null otherwise.
 */
export function traceUrlTemplate(env: object): string | null {
  const raw = (env as { TRACE_URL?: unknown }).TRACE_URL;
  if (typeof raw !== "string" || !raw.includes("{trace_id}")) return null;
  try {
    const url = new URL(raw.replaceAll("{trace_id}", "0"));
    return url.protocol === "https:" || url.protocol === "http:" ? raw : null;
  } catch {
    return null;
  }
}

const escapeAttr = (s: string) =>
  s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** The page; `traceUrl`: the trace link's template (traceUrlTemplate), or null for the id alone. */
export function runPage(traceUrl: string | null = null): Response {
  const body = BODY.replace("{TRACE_URL}", escapeAttr(traceUrl ?? ""));
  return htmlResponse({ title: "Run", body, script: RUN_PAGE_SCRIPT });
}
