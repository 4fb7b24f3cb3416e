/**
 * The run list page (GET /view/runs); see src/viewer/runs-page.ts.
 * Bundled with common.ts into the page's inline script at build time.
 */
import { apiFetch, byId, el, formatMs, formatTime, problemText, showNotice } from "./common.ts";
import { wireRunForms } from "./run-form.ts";

wireRunForms();

const query = new URLSearchParams(location.search);
const workflowInput = byId("workflow-input");
const statusFilter = byId("status-filter");
const limitInput = byId("limit-input");
const olderButton = byId("older");
const newerButton = byId("newer");
workflowInput.value = query.get("workflow") || "";
statusFilter.value = query.get("status") || "";
if (query.get("limit")) limitInput.value = query.get("limit");

/** The cursors of the pages seen so far: pages[0] is the newest (no cursor). */
let pages = [null];
let nextCursor = null;
let refreshTimer: ReturnType<typeof setTimeout> | undefined;

function limit() {
  const n = parseInt(limitInput.value, 10);
  return Math.min(100, Math.max(1, Number.isFinite(n) ? n : 20));
}

function showFirstPage() {
  const q = new URLSearchParams({ workflow: workflowInput.value.trim() });
  if (statusFilter.value) q.set("status", statusFilter.value);
  if (limit() !== 20) q.set("limit", String(limit()));
  history.replaceState(null, "", `${location.pathname}?${q.toString()}`);
  pages = [null];
  loadRuns();
}

byId("workflow-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  showFirstPage();
});
statusFilter.addEventListener("change", () => {
  if (workflowInput.value.trim()) showFirstPage();
});
byId("refresh").addEventListener("click", () => loadRuns());
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
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, end - start) : null;
}

async function loadRuns() {
  const name = workflowInput.value.trim();
  if (!name) {
    showNotice("Enter a workflow name.");
    return;
  }
  clearTimeout(refreshTimer);
  byId("workflow-title").textContent = name;
  document.title = `Runs of ${name}`;
  const q = new URLSearchParams({ workflow: name, limit: String(limit()) });
  if (statusFilter.value) q.set("status", statusFilter.value);
  const cursor = pages[pages.length - 1];
  if (cursor) q.set("cursor", cursor);
  const res = await apiFetch(`/runs?${q.toString()}`);
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
  byId("page-number").textContent = `Page ${pages.length}`;
  const filtered = statusFilter.value ? ` ${statusFilter.value}` : "";
  showNotice(
    list.runs.length === 0
      ? pages.length > 1
        ? `No older${filtered} runs.`
        : `No${filtered} runs yet.`
      : "",
  );
  // While a run on this page is still going, keep the page current.
  if (list.runs.some((r) => r.status === "pending" || r.status === "running"))
    refreshTimer = setTimeout(loadRuns, 3000);
  tbody.replaceChildren(
    ...list.runs.map((r) => {
      const link = el(
        "a",
        { class: "mono", href: `/runs/${encodeURIComponent(r.run_id)}/view` },
        `${r.run_id.slice(0, 16)}…`,
      );
      return el(
        "tr",
        { "data-run": r.run_id, "data-status": r.status },
        el("td", null, link),
        el("td", null, el("span", { class: "status", "data-status": r.status }, r.status)),
        el("td", null, formatTime(r.created_at)),
        el("td", null, formatTime(r.finished_at)),
        el("td", { class: "num" }, formatMs(durationOf(r))),
      );
    }),
  );
}

/** The workflow's scores over the last day (GET /workflows/{name}/scores), its table, comparisons and charts. */
async function loadScores(name: string) {
  const section = byId("scores");
  const res = await apiFetch(`/workflows/${encodeURIComponent(name)}/scores`);
  if (!res.ok) {
    section.hidden = true;
    return;
  }
  const report = await res.json();
  section.hidden = report.scores.length === 0;
  const f = (n) => Number(n).toFixed(2);
  document
    .querySelector("#score-table tbody")
    .replaceChildren(
      ...report.scores.map((s) =>
        el(
          "tr",
          { "data-step": s.step, "data-scorer": s.scorer, "data-arm": s.arm ?? "" },
          el("td", { class: "mono" }, s.step),
          el("td", null, s.scorer),
          el("td", null, s.version ?? ""),
          el("td", null, s.arm ?? ""),
          el("td", { class: "num" }, String(s.count)),
          el("td", { class: "num" }, f(s.mean)),
          el("td", { class: "num" }, f(s.p10)),
          el("td", { class: "num" }, f(s.p50)),
          el("td", { class: "num" }, f(s.p90)),
        ),
      ),
    );
  const comparisons = byId("score-comparisons");
  comparisons.hidden = report.comparisons.length === 0;
  comparisons
    .querySelector("tbody")
    .replaceChildren(
      ...report.comparisons.map((c) =>
        el(
          "tr",
          { "data-scorer": c.scorer, "data-arm": c.arm, "data-significant": String(c.significant) },
          el("td", { class: "mono" }, c.step),
          el("td", null, c.scorer),
          el("td", null, c.arm),
          el("td", null, c.control),
          el("td", { class: "num" }, `${c.diff >= 0 ? "+" : ""}${f(c.diff)}`),
          el("td", null, `[${f(c.ci95[0])}, ${f(c.ci95[1])}]`),
          el("td", null, c.significant ? "significant" : "not significant"),
        ),
      ),
    );
  const charts = byId("score-charts");
  const scorers = [...new Set(report.scores.map((s) => s.scorer))];
  const svgs = await Promise.all(
    scorers.map(async (scorer) => {
      const r = await apiFetch(
        `/workflows/${encodeURIComponent(name)}/scores?chart=${encodeURIComponent(String(scorer))}`,
      );
      if (!r.ok) return null;
      // Drawn by the server (src/viewer/score-chart.ts): parsed as SVG, never as HTML.
      const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
      return el(
        "figure",
        null,
        el("figcaption", null, `${scorer}: daily mean by arm`),
        document.importNode(doc.documentElement, true),
      );
    }),
  );
  charts.replaceChildren(...svgs.filter((x) => x !== null));
}

if (workflowInput.value) {
  loadRuns().catch((err) => showNotice(String(err?.message ? err.message : err), "error"));
  loadScores(workflowInput.value.trim()).catch(() => {});
}
