/**
 * The run viewer page (GET /runs/{id}/view); see src/viewer/run-page.ts for the elements tests rely on.
 * Bundled with common.ts into the page's inline script at build time.
 */
import { apiFetch, byId, el, formatMs, formatTime, formatUsd, problemText, showNotice } from "./common.ts";

const parts = location.pathname.split("/");
const runId = decodeURIComponent(parts[2] || "");
const runPath = `/runs/${encodeURIComponent(runId)}`;
const ACTIVE = new Set(["queued", "pending", "running"]);

let envelope = null;
/** Graph nodes by slash path, in pipeline order (parents before children). */
const nodes = new Map();
/** Step records by slash path (from the envelope, then from events). */
const records = new Map();
let selected = null;
let followAbort = null;

byId("run-id").textContent = runId;

function flatten(steps, prefix) {
  for (const s of steps || []) {
    const path = prefix + s.id;
    records.set(path, s);
    flatten(s.steps, `${path}/`);
  }
}

function isActive() {
  return envelope && ACTIVE.has(envelope.status);
}

// ---- fan-out items -----------------------------------------------------------------------------

/** The started items of the fan-out step at path, by index: [[index, record], ...]. */
function itemsOf(path) {
  const out = [];
  const prefix = `${path}/`;
  for (const [p, rec] of records) {
    if (!p.startsWith(prefix)) continue;
    const rest = p.slice(prefix.length);
    if (/^(0|[1-9][0-9]*)$/.test(rest)) out.push([Number(rest), rec]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/** The fan-out step of an item path (post/3 -> node post), or null. */
function itemOwner(path) {
  const cut = path.lastIndexOf("/");
  if (cut < 0 || !/^(0|[1-9][0-9]*)$/.test(path.slice(cut + 1))) return null;
  const owner = nodes.get(path.slice(0, cut));
  return owner?.for_each ? owner : null;
}

function itemBadge(path) {
  const items = itemsOf(path);
  const done = items.filter(([, r]) => r.status !== "running" && r.status !== "pending").length;
  const text = items.length === 1 ? "1 item" : `${items.length} items`;
  return { count: items.length, done, text: done < items.length ? `${text} · ${done} done` : text };
}

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

function stepDuration(rec) {
  if (!rec?.started_at) return null;
  const end = rec.finished_at ? Date.parse(rec.finished_at) : Date.now();
  return Math.max(0, end - Date.parse(rec.started_at));
}

// ---- graph -------------------------------------------------------------------------------------

function depthOf(node, byPath, memo) {
  if (memo.has(node.path)) return memo.get(node.path);
  memo.set(node.path, 0);
  let d = 0;
  for (const dep of node.deps) {
    const n = byPath.get(dep);
    if (n) d = Math.max(d, depthOf(n, byPath, memo) + 1);
  }
  memo.set(node.path, d);
  return d;
}

function buildGraph(parent) {
  const level = [...nodes.values()].filter((n) => n.parent === parent);
  const graph = el("div", { class: "graph", "data-graph": parent === null ? "" : parent });
  const memo = new Map();
  const columns = [];
  for (const n of level) {
    const d = depthOf(n, nodes, memo);
    while (columns.length <= d) columns.push(el("div", { class: "column" }));
    columns[d].append(buildNode(n));
  }
  const edges = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  edges.setAttribute("class", "edges");
  graph.append(edges);
  for (const c of columns) graph.append(c);
  return graph;
}

function buildNode(n) {
  const head = el(
    "button",
    { type: "button", class: "node-head", title: n.condition ? `condition: ${n.condition}` : null },
    el("span", { class: "kind" }, n.kind),
    el("span", { class: "node-id" }, n.id),
  );
  head.addEventListener("click", (ev) => {
    ev.stopPropagation();
    select(n.path);
  });
  const node = el(
    "div",
    { class: "node", "data-step": n.path, "data-kind": n.kind, "data-status": "pending" },
    head,
    el("span", { class: "status" }, "pending"),
  );
  if (n.for_each) {
    // Items are records, not graph nodes: a count here, a table in the details panel.
    node.dataset.fanOut = "true";
    head.append(el("span", { class: "items", "data-items": "0", "data-items-done": "0" }, "0 items"));
  } else if (n.kind === "workflow") {
    node.append(buildGraph(n.path));
  }
  return node;
}

function drawEdges() {
  for (const graph of document.querySelectorAll<HTMLElement>(".graph")) {
    const svg = graph.querySelector(":scope > svg.edges");
    const box = graph.getBoundingClientRect();
    svg.setAttribute("width", String(graph.scrollWidth));
    svg.setAttribute("height", String(graph.scrollHeight));
    svg.replaceChildren();
    const parent = graph.dataset.graph === "" ? null : graph.dataset.graph;
    for (const n of nodes.values()) {
      if (n.parent !== parent) continue;
      const to = nodeElement(n.path);
      if (!to) continue;
      for (const dep of n.deps) {
        const from = nodeElement(dep);
        if (!from) continue;
        const a = from.getBoundingClientRect();
        const b = to.getBoundingClientRect();
        const x1 = a.right - box.left + graph.scrollLeft,
          y1 = a.top + Math.min(a.height / 2, 24) - box.top;
        const x2 = b.left - box.left + graph.scrollLeft,
          y2 = b.top + Math.min(b.height / 2, 24) - box.top;
        const mid = (x1 + x2) / 2;
        const p = document.createElementNS("http://www.w3.org/2000/svg", "path");
        p.setAttribute("d", `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`);
        p.setAttribute("data-edge", `${dep} -> ${n.path}`);
        svg.append(p);
      }
    }
  }
}

function nodeElement(path) {
  for (const e of document.querySelectorAll<HTMLElement>(".node[data-step]"))
    if (e.dataset.step === path) return e;
  return null;
}

// ---- rendering ---------------------------------------------------------------------------------

function renderSummary() {
  const e = envelope;
  document.title = `${e.workflow} run ${e.run_id.slice(0, 8)}`;
  byId("workflow-name").textContent = e.workflow;
  byId("workflow-version").textContent = e.workflow_version ? `v${e.workflow_version}` : "";
  const status = byId("run-status");
  status.dataset.status = e.status;
  status.textContent = e.status;
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

// ---- cancel, re-run, signals (SPEC 12, 13) -----------------------------------------------------

function renderActions() {
  const e = envelope;
  byId("cancel-run").hidden = !isActive();
  byId("rerun-run").hidden = isActive() || e.status === "complete";
  const of = byId<HTMLAnchorElement>("rerun-of");
  of.hidden = !e.rerun_of;
  if (e.rerun_of) {
    of.href = `/runs/${encodeURIComponent(e.rerun_of)}/view`;
    of.textContent = `re-run of ${e.rerun_of.slice(0, 12)}…`;
  }
}

/** POSTs an action with the workflow's credentials (asked for like Approve); null when refused. */
async function act(path, body, what) {
  const res = await apiFetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    showNotice(`${what} failed (${await problemText(res)}).`, "error");
    return null;
  }
  return res.json();
}

async function rerunFrom(from) {
  const done = await act(`${runPath}/rerun`, from ? { from } : {}, "The re-run");
  if (done?.run_id) location.assign(`/runs/${encodeURIComponent(done.run_id)}/view`);
}

byId("rerun-run").addEventListener("click", () => rerunFrom(null));
byId("rerun-from").addEventListener("click", () => {
  if (selected !== null) rerunFrom(selected);
});
byId("cancel-run").addEventListener("click", async () => {
  byId<HTMLButtonElement>("cancel-run").disabled = true;
  const e = await act(`${runPath}/cancel`, undefined, "Cancel");
  byId<HTMLButtonElement>("cancel-run").disabled = false;
  if (e?.status) await load();
});
byId("signal-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const n = selected === null ? null : nodes.get(selected);
  if (!n?.wait?.signal) return;
  let body: unknown;
  try {
    body = JSON.parse(byId<HTMLTextAreaElement>("signal-body").value || "{}");
  } catch {
    showNotice("The signal body is not JSON.", "error");
    return;
  }
  const done = await act(`${runPath}/signals/${encodeURIComponent(n.wait.signal)}`, body, "The signal");
  if (done) showNotice(done.delivered ? `Delivered to ${done.step}.` : "Kept for the wait.", "info");
});

function renderNodes() {
  for (const n of nodes.values()) {
    const e = nodeElement(n.path);
    if (!e) continue;
    const rec = records.get(n.path);
    const status = rec ? rec.status : "pending";
    if (e.dataset.status !== status) {
      e.dataset.status = status;
      e.querySelector(":scope > .status").textContent = status;
    }
    const badge = n.for_each ? e.querySelector<HTMLElement>(":scope > .node-head > .items") : null;
    if (badge) {
      const b = itemBadge(n.path);
      badge.dataset.items = String(b.count);
      badge.dataset.itemsDone = String(b.done);
      badge.textContent = b.text;
    }
    e.classList.toggle("selected", selected === n.path);
  }
}

function renderTimeline() {
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

function json(v) {
  return v === undefined ? "" : JSON.stringify(v, null, 2);
}

function renderDetails() {
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

function render() {
  renderSummary();
  renderNodes();
  renderTimeline();
  renderDetails();
  drawEdges();
}

function select(path) {
  selected = selected === path ? null : path;
  render();
}

// ---- approvals ---------------------------------------------------------------------------------

let approvalList = [];
let approvalsShown = "";
/** Comments being typed, by approval id: a re-render (a live event) must not lose them. */
const drafts = new Map();

async function loadApprovals() {
  const res = await apiFetch(`${runPath}/approvals`);
  if (!res.ok) return;
  approvalList = (await res.json()).approvals || [];
  const shown = JSON.stringify(approvalList);
  if (shown === approvalsShown) return;
  approvalsShown = shown;
  renderApprovals();
}

function renderApprovals() {
  const items = approvalList.map((a) => {
    const what =
      a.kind === "tool" ? `call ${a.tool} on ${a.server}` : "its output (the agent asked for a human)";
    const item = el(
      "div",
      { class: "approval", "data-approval": a.id, "data-status": a.status },
      el(
        "div",
        null,
        el("span", { class: "status approval-status", "data-status": a.status }, a.status),
        " ",
        el("span", { class: "mono" }, a.step),
        " wants to ",
        what,
      ),
      el("pre", { class: "approval-args" }, json(a.arguments)),
    );
    if (a.status === "pending") {
      const comment = el("input", {
        class: "approval-comment",
        placeholder: "Comment (optional)",
        "aria-label": "Comment",
        autocomplete: "off",
      });
      comment.value = drafts.get(a.id) || "";
      comment.addEventListener("input", () => drafts.set(a.id, comment.value));
      const button = (decision, label) => {
        const b = el("button", { type: "button", "data-decision": decision }, label);
        b.addEventListener("click", () => decideApproval(a.id, decision, comment.value, item));
        return b;
      };
      item.append(
        el(
          "div",
          { class: "approval-actions" },
          comment,
          button("approved", "Approve"),
          button("rejected", "Reject"),
        ),
        el("small", { class: "muted" }, `Expires ${formatTime(a.expires_at)}`),
      );
    } else {
      item.append(
        el(
          "small",
          { class: "muted" },
          (a.status === "timeout" ? "Timed out " : `${a.status} `) +
            formatTime(a.decided_at) +
            (a.comment ? `: ${a.comment}` : ""),
        ),
      );
    }
    return item;
  });
  byId("approval-list").replaceChildren(...items);
  const section = byId("approvals");
  section.hidden = approvalList.length === 0;
  section.dataset.pending = String(approvalList.filter((a) => a.status === "pending").length);
}

async function decideApproval(id, decision, comment, item) {
  for (const b of item.querySelectorAll("button")) b.disabled = true;
  const body = comment ? { decision, comment } : { decision };
  const res = await apiFetch(`${runPath}/approvals/${encodeURIComponent(id)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) showNotice(`The decision was not recorded (${await problemText(res)}).`, "error");
  await loadApprovals();
}

// ---- live events -------------------------------------------------------------------------------

function setLive(state) {
  document.body.dataset.live = state;
  byId("live-state").textContent = state === "open" ? "live" : "";
}

function applyEvent(ev) {
  if (typeof ev.type === "string" && ev.type.startsWith("approval.")) {
    loadApprovals();
    return;
  }
  if (ev.type === "run.completed") {
    envelope.status = ev.status;
    envelope.error = ev.error === undefined ? envelope.error : ev.error;
    envelope.output = ev.output === undefined ? envelope.output : ev.output;
    if (ev.totals) envelope.totals = ev.totals;
    if (!envelope.finished_at) envelope.finished_at = ev.time;
    return;
  }
  if (typeof ev.step !== "string") return;
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

async function follow() {
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
  await loadApprovals();
  if (isActive()) {
    setTimeout(follow, 1000);
  } else {
    setLive("closed");
    showNotice("");
  }
}

// ---- loading -----------------------------------------------------------------------------------

async function load() {
  const res = await apiFetch(runPath);
  if (!res.ok) throw Object.assign(new Error(await problemText(res)), { status: res.status });
  envelope = await res.json();
  records.clear();
  flatten(envelope.steps, "");
  render();
}

async function start() {
  if (!/^[0-9a-f]{64}$/.test(runId)) {
    showNotice(`Not a run id: ${runId}`, "error");
    return;
  }
  try {
    const [graphRes] = await Promise.all([apiFetch(`${runPath}/graph`), load()]);
    await loadApprovals();
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

window.addEventListener("resize", () => {
  if (envelope) drawEdges();
});
start();
