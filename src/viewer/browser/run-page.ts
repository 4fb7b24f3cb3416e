/**
 * The run viewer page (GET /runs/{id}/view) is drawn by the parts in run-page/; this entry is the
 * one place that knows them all, so it says what a redraw draws, loads the run and its graph,
 * and follows live events while the run is active. Bundled with common.ts and run-page/ into the
 * page's inline script at build time; src/viewer/run-page.ts lists the elements tests rely on.
 */
import { apiFetch, byId, problemText, showNotice } from "./common.ts";
import { loadApprovals } from "./run-page/approvals.ts";
import { renderCompensation, retryCompensation } from "./run-page/compensation.ts";
import { loadDeliveries } from "./run-page/deliveries.ts";
import { renderDetails } from "./run-page/details.ts";
import { buildGraph, drawEdges, renderNodes } from "./run-page/graph.ts";
import { follow, setLive } from "./run-page/live-events.ts";
import { envelope, isActive, load, nodes, render, runId, runPath, setRender } from "./run-page/state.ts";
import { renderSummary } from "./run-page/summary.ts";
import { renderTimeline } from "./run-page/timeline.ts";

byId("run-id").textContent = runId;

setRender(() => {
  renderSummary();
  renderCompensation();
  renderNodes();
  renderTimeline();
  renderDetails();
  drawEdges();
});

async function start() {
  // The server serves this page for run ids only (src/run/jurisdiction.ts): a jurisdiction, then hex.
  if (!/^(?:[a-z-]+-)?[0-9a-f]{64}$/.test(runId)) {
    showNotice(`Not a run id: ${runId}`, "error");
    return;
  }
  try {
    const [graphRes] = await Promise.all([apiFetch(`${runPath}/graph`), load()]);
    await Promise.all([loadApprovals(), loadDeliveries()]);
    if (!graphRes.ok) throw new Error(await problemText(graphRes));
    const graph = await graphRes.json();
    for (const n of graph.nodes) nodes.set(n.path, n);
    byId("graph-root").replaceChildren(buildGraph(null));
    render();
  } catch (err) {
    showNotice(
      err && err.status === 404
        ? "No run with this id (it may have expired or been deleted)."
        : String(err?.message ? err.message : err),
      "error",
    );
    byId("run-status").textContent = "unavailable";
    return;
  }
  if (isActive()) {
    follow();
    // Running bars and durations grow between events.
    const tick = setInterval(() => {
      if (isActive()) {
        renderTimeline();
        renderSummary();
      } else clearInterval(tick);
    }, 500);
  } else {
    setLive("closed");
  }
}

byId("compensate-run").addEventListener("click", () => {
  retryCompensation().then(() => {
    if (!isActive()) {
      envelope.compensation.status = "running";
      follow();
    }
  });
});

window.addEventListener("resize", () => {
  if (envelope) drawEdges();
});
start();
