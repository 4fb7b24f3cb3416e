/**
 * An active run changes while it is watched: the page follows /runs/{id}/events, read with
 * fetch() because EventSource cannot send the credential header, applies each event to the state
 * and redraws, then reloads the envelope when the stream ends so the page matches it exactly.
 */
import { apiFetch, byId, problemText, showNotice } from "../common.ts";
import { loadApprovals } from "./approvals.ts";
import { applyCompensationEvent } from "./compensation.ts";
import { loadDeliveries } from "./deliveries.ts";
import { envelope, isActive, load, records, render, runPath, streams } from "./state.ts";

let followAbort = null;

export function setLive(state) {
  document.body.dataset.live = state;
  byId("live-state").textContent = state === "open" ? "live" : "";
}

function applyEvent(ev) {
  // A streaming step's answer grows as it is written (docs/http-api.md, "Streaming").
  if (ev.type === "output.delta") {
    streams.set(ev.step, (streams.get(ev.step) ?? "") + ev.text);
    return;
  }
  if (ev.type === "output.reset") {
    streams.set(ev.step, "");
    return;
  }
  if (typeof ev.type === "string" && ev.type.startsWith("compensation.")) {
    applyCompensationEvent(ev);
    return;
  }
  if (typeof ev.type === "string" && ev.type.startsWith("approval.")) {
    loadApprovals();
    return;
  }
  if (ev.type === "step.scored") {
    // A step's scores (docs/file-format.md, "Scores"): kept beside the run's others, once each.
    const others = (envelope.scores || []).filter(
      (s) => s.step !== ev.step || !ev.scores.some((n) => n.name === s.name),
    );
    envelope.scores = [...others, ...ev.scores.map((s) => ({ step: ev.step, variant: ev.variant, ...s }))];
    return;
  }
  if (ev.type === "run.completed") {
    if (ev.scores) envelope.scores = ev.scores;
    envelope.status = ev.status;
    envelope.error = ev.error === undefined ? envelope.error : ev.error;
    envelope.output = ev.output === undefined ? envelope.output : ev.output;
    if (ev.totals) envelope.totals = ev.totals;
    if (!envelope.finished_at) envelope.finished_at = ev.time;
    return;
  }
  if (typeof ev.step !== "string") return;
  if (ev.status !== "running") streams.delete(ev.step);
  const prev = records.get(ev.step) || { id: ev.id, steps: [] };
  records.set(ev.step, {
    ...prev,
    id: ev.id || prev.id,
    status: ev.status,
    output: ev.output === undefined ? prev.output : ev.output,
    error: ev.error === undefined ? prev.error : ev.error,
    metrics: ev.metrics || prev.metrics,
    started_at: ev.started_at === undefined ? prev.started_at : ev.started_at,
    finished_at: ev.finished_at === undefined ? prev.finished_at : ev.finished_at,
  });
  if (envelope.status === "pending" && ev.status === "running") envelope.status = "running";
}

/** Parses one SSE block (lines up to a blank line); returns the JSON of its data lines, or null. */
function parseBlock(block) {
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) data.push(line.slice(line.charAt(5) === " " ? 6 : 5));
  }
  if (data.length === 0) return null;
  try {
    return JSON.parse(data.join("\n"));
  } catch {
    return null;
  }
}

export async function follow() {
  followAbort = new AbortController();
  setLive("open");
  try {
    const res = await apiFetch(`${runPath}/events`, {
      headers: { accept: "text/event-stream" },
      signal: followAbort.signal,
    });
    if (!res.ok || !res.body) throw new Error(await problemText(res));
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = (buffer + value).replace(/\r\n?/g, "\n");
      let changed = false;
      for (let cut = buffer.indexOf("\n\n"); cut >= 0; cut = buffer.indexOf("\n\n")) {
        const ev = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (ev) {
          applyEvent(ev);
          changed = true;
        }
      }
      if (changed) render();
    }
  } catch (err) {
    if (err && err.name === "AbortError") return;
    showNotice(`Live updates interrupted (${err?.message ? err.message : err}); retrying.`, "error");
  }
  // The stream closes when the run ends; reload the envelope so the page matches it exactly.
  await load();
  await Promise.all([loadApprovals(), loadDeliveries()]);
  if (isActive()) {
    setTimeout(follow, 1000);
  } else {
    setLive("closed");
    showNotice("");
  }
}
