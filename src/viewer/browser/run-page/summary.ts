/**
 * Whoever opens a run first wants its outcome: the header says the workflow, the status, when it
 * ran, what it cost against its budget and the error if it failed, why a queued run waits and how
 * many invokes a coalesced one stands for, and offers what can be done to the run in that state.
 */
import { byId, el, formatMs, formatTime, formatUsd } from "../common.ts";
import { renderActions } from "./actions.ts";
import { envelope, isActive } from "./state.ts";

export function renderSummary() {
  const e = envelope;
  document.title = `${e.workflow} run ${e.run_id.slice(0, 8)}`;
  byId("workflow-name").textContent = e.workflow;
  byId("workflow-version").textContent = e.workflow_version ? `v${e.workflow_version}` : "";
  const status = byId("run-status");
  status.dataset.status = e.status;
  status.textContent = e.status;
  // The run's trace, linked to the operator's backend when the page was given its URL.
  const traceLine = byId("trace-line");
  const template = traceLine.dataset.traceUrl ?? "";
  const traceLink = byId<HTMLAnchorElement>("trace-link");
  traceLink.hidden = template === "";
  traceLink.textContent = template === "" ? "" : e.trace_id;
  if (template !== "") traceLink.href = template.replaceAll("{trace_id}", encodeURIComponent(e.trace_id));
  byId("trace-id").textContent = template === "" ? e.trace_id : "";
  traceLine.hidden = !e.trace_id;
  const link = byId<HTMLAnchorElement>("runs-link");
  link.href = `/view/runs?workflow=${encodeURIComponent(e.workflow)}`;
  link.hidden = false;
  const t = e.totals || {};
  const fields = [
    ["Created", formatTime(e.created_at)],
    ["Finished", formatTime(e.finished_at)],
    ["Duration", formatMs(isActive() ? Date.now() - Date.parse(e.created_at) : t.duration_ms)],
    ["Deadline", formatTime(e.deadline)],
    [
      "Cost",
      formatUsd(t.cost_usd) +
        (e.budget_usd !== null && e.budget_usd !== undefined ? ` of ${formatUsd(e.budget_usd)}` : ""),
    ],
    ["Tokens in / out", `${t.tokens_in || 0} / ${t.tokens_out || 0}`],
    ["LLM calls", String(t.llm_calls || 0)],
    // A run that stands for a debounce group or a batch, and one that waits its turn (docs/triggers.md).
    ...(e.coalesced > 1 ? [["Coalesced", `${e.coalesced} invokes`]] : []),
    ...(e.queue
      ? [
          [
            "Queued",
            `by ${e.queue.reason}${e.queue.starts_at ? `, expected to start ${formatTime(e.queue.starts_at)}` : ", until a run of its key ends"}`,
          ],
        ]
      : []),
    [
      "Error",
      e.error ? `${e.error.code + (e.error.step ? ` at ${e.error.step}` : "")}: ${e.error.message}` : "none",
    ],
  ];
  byId("summary").replaceChildren(
    ...fields.map(([k, v]) => el("div", { "data-field": k }, el("dt", null, k), el("dd", null, v))),
  );
  renderActions();
}
