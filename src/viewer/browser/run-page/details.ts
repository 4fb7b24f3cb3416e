/**
 * The graph and the timeline show every step at a glance; the details panel shows one: the run
 * itself (its params, output, request headers) or the selected step or fan-out item, with its
 * masked output, error, metrics and, for a fan-out step, the table of its items.
 */
import { byId, el, formatMs, formatTime, formatUsd } from "../common.ts";
import {
  envelope,
  isActive,
  itemBadge,
  itemOwner,
  itemsOf,
  nodes,
  records,
  select,
  selected,
  stepDuration,
} from "./state.ts";

function renderItems(path) {
  const box = byId("details-items-box");
  const n = path === null ? null : nodes.get(path);
  if (!n?.for_each) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const items = itemsOf(path);
  byId("details-items-title").textContent = `Items (${items.length} started)`;
  const rows = items.map(([i, rec]) => {
    const row = el(
      "tr",
      { "data-item": String(i), "data-status": rec.status },
      el("td", { class: "num mono" }, String(i)),
      el("td", null, el("span", { class: "status", "data-status": rec.status }, rec.status)),
      el("td", { class: "num" }, formatMs(rec.started_at ? stepDuration(rec) : null)),
      el("td", { class: "num" }, formatUsd(rec.metrics?.cost_usd || 0)),
      el("td", { class: "mono" }, rec.error ? rec.error.code : ""),
    );
    row.addEventListener("click", () => select(`${path}/${i}`));
    return row;
  });
  document.querySelector("#details-items tbody").replaceChildren(...rows);
}

export function json(v) {
  return v === undefined ? "" : JSON.stringify(v, null, 2);
}

export function renderDetails() {
  const fields = byId("details-fields");
  const owner = selected === null ? null : itemOwner(selected);
  renderItems(owner ? owner.path : selected);
  if (selected === null) {
    byId("step-actions").hidden = true;
    byId("signal-form").hidden = true;
    byId("details-title").textContent = "Run";
    byId("details-output-title").textContent = "Params";
    const outTitle = isActive() ? "" : `\n\nOutput:\n${json(envelope.output)}`;
    byId("details-output").textContent = json(envelope.params) + outTitle;
    byId("details-error").textContent = envelope.error ? json(envelope.error) : "none";
    // The request headers the workflow declared (invoke.headers), as the run recorded them.
    const headers = envelope.request?.headers ? envelope.request.headers : {};
    const hasHeaders = Object.keys(headers).length > 0;
    byId("details-request-title").hidden = !hasHeaders;
    byId("details-request").hidden = !hasHeaders;
    byId("details-request").textContent = hasHeaders ? json(headers) : "";
    fields.replaceChildren(
      el("dt", null, "Status"),
      el("dd", null, envelope.status),
      el("dt", null, "Steps"),
      el("dd", null, String(nodes.size)),
    );
    return;
  }
  const n = nodes.get(selected);
  const rec = records.get(selected) || { status: "pending", output: null, error: null, metrics: {} };
  const m = rec.metrics || {};
  byId("details-title").textContent = owner
    ? `${owner.path} · item ${selected.slice(owner.path.length + 1)}`
    : selected;
  byId("details-request-title").hidden = true;
  byId("details-request").hidden = true;
  byId("details-output-title").textContent = "Output";
  byId("details-output").textContent =
    rec.status === "complete" || rec.output !== null ? json(rec.output) : "(no output yet)";
  byId("details-error").textContent = rec.error ? json(rec.error) : "none";
  const pairs = [
    ["Kind", n ? n.kind : owner ? `item of ${owner.kind} step ${owner.path}` : ""],
    ["Status", rec.status],
    ["Depends on", n?.deps.length ? n.deps.join(", ") : "nothing"],
    ["Condition", n?.condition ? n.condition : "none"],
    ...(n?.for_each
      ? [
          [
            "For each",
            n.for_each.from + (n.for_each.concurrency ? ` (concurrency ${n.for_each.concurrency})` : ""),
          ],
          ["Items", itemBadge(n.path).text],
        ]
      : []),
    ["Started", formatTime(rec.started_at)],
    ["Finished", formatTime(rec.finished_at)],
    ["Duration", formatMs(rec.started_at ? stepDuration(rec) : null)],
    ["Tokens in / out", `${m.tokens_in || 0} / ${m.tokens_out || 0}`],
    ["Cost", formatUsd(m.cost_usd || 0)],
    ["LLM calls", String(m.llm_calls || 0)],
    ["Attempts", String(m.attempts || 0)],
    ...(rec.reused_from ? [["Reused from", rec.reused_from]] : []),
    // Its arm and its scores (docs/file-format.md, "Variants" and "Scores").
    ...(rec.variant ? [["Variant", rec.variant]] : []),
    ...scoreRows(selected),
    ...(n?.wait
      ? [
          [
            "Waits for",
            n.wait.signal
              ? `signal ${n.wait.signal}${n.wait.keyed ? " (keyed)" : ""}, up to ${n.wait.timeout_s} s`
              : n.wait.for_s !== null
                ? `${n.wait.for_s} s`
                : "a time",
          ],
        ]
      : []),
  ];
  fields.replaceChildren(...pairs.flatMap(([k, v]) => [el("dt", null, k), el("dd", { "data-field": k }, v)]));
  byId("step-actions").hidden = isActive() || owner !== null;
  const form = byId("signal-form");
  form.hidden = !(n?.wait?.signal && rec.status === "waiting");
  if (!form.hidden) byId("signal-title").textContent = `Send ${n.wait.signal}`;
}

/** One "Score name" row per score of the step: its value (or error) and the judge's reason. */
function scoreRows(path) {
  return (envelope.scores || [])
    .filter((s) => s.step === path)
    .map((s) => [
      `Score ${s.name}`,
      s.error ? `error: ${s.error}` : `${s.value}${s.reason ? ` (${s.reason})` : ""}`,
    ]);
}
