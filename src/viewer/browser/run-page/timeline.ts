/**
 * The graph shows how steps depend on each other, not how long they took: the timeline lists every
 * step in pipeline order with a bar on the run's time axis and its tokens, cost, model calls and
 * attempts, so the slow or expensive step stands out.
 */
import { el, formatMs, formatUsd } from "../common.ts";
import { envelope, nodes, records, select, selected, stepDuration } from "./state.ts";

export function renderTimeline() {
  const t0 = Date.parse(envelope.created_at);
  let t1 = envelope.finished_at ? Date.parse(envelope.finished_at) : Date.now();
  for (const r of records.values()) {
    if (r.finished_at) t1 = Math.max(t1, Date.parse(r.finished_at));
  }
  const span = Math.max(1, t1 - t0);
  const rows = [];
  for (const n of nodes.values()) {
    const rec = records.get(n.path) || { status: "pending", metrics: {} };
    const m = rec.metrics || {};
    const bar = el("div", { class: "bar", "data-status": rec.status });
    // A skipped step never ran: it has a moment, not a duration.
    const ran = Boolean(rec.started_at) && rec.status !== "skipped";
    if (ran) {
      const s = Date.parse(rec.started_at) - t0;
      const end = rec.finished_at ? Date.parse(rec.finished_at) - t0 : Date.now() - t0;
      bar.style.left = `${Math.max(0, (100 * s) / span)}%`;
      bar.style.width = `${Math.max(0, (100 * (end - s)) / span)}%`;
    } else {
      bar.hidden = true;
    }
    const depth = n.path.split("/").length - 1;
    const name = el("td", { class: "mono" }, n.path);
    name.style.paddingLeft = `${0.5 + depth * 1.25}rem`;
    const row = el(
      "tr",
      { "data-step": n.path, "data-status": rec.status, class: selected === n.path ? "selected" : null },
      name,
      el("td", null, el("span", { class: "status", "data-status": rec.status }, rec.status)),
      el("td", { class: "bar-cell" }, el("div", { class: "track" }, bar)),
      el("td", { class: "num" }, formatMs(ran ? stepDuration(rec) : null)),
      el("td", { class: "num" }, String(m.tokens_in || 0)),
      el("td", { class: "num" }, String(m.tokens_out || 0)),
      el("td", { class: "num" }, formatUsd(m.cost_usd || 0)),
      el("td", { class: "num" }, String(m.llm_calls || 0)),
      el("td", { class: "num" }, String(m.attempts || 0)),
    );
    row.addEventListener("click", () => select(n.path));
    rows.push(row);
  }
  document.querySelector("#timeline tbody").replaceChildren(...rows);
}
