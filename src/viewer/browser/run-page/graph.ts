/**
 * The run's pipeline is easiest to follow as its dependency graph: each step a node placed in a
 * column by its depth, sub-workflows drawn inside their step, and the dependencies as curves that
 * are measured from the laid-out nodes, so they are redrawn whenever the layout may have moved.
 */
import { el } from "../common.ts";
import { itemBadge, nodes, records, select, selected, streams } from "./state.ts";

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

export function buildGraph(parent) {
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

export function drawEdges() {
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
        const p = document.createElementNS("http://www.w3.org/2000/svg", "path");
        if (getComputedStyle(graph).flexDirection === "column") {
          // On a narrow screen the levels are rows (page-shell's style): bottom of one to top of the next.
          const x1 = a.left + a.width / 2 - box.left + graph.scrollLeft,
            y1 = a.bottom - box.top + graph.scrollTop;
          const x2 = b.left + b.width / 2 - box.left + graph.scrollLeft,
            y2 = b.top - box.top + graph.scrollTop;
          const mid = (y1 + y2) / 2;
          p.setAttribute("d", `M${x1},${y1} C${x1},${mid} ${x2},${mid} ${x2},${y2}`);
        } else {
          const x1 = a.right - box.left + graph.scrollLeft,
            y1 = a.top + Math.min(a.height / 2, 24) - box.top;
          const x2 = b.left - box.left + graph.scrollLeft,
            y2 = b.top + Math.min(b.height / 2, 24) - box.top;
          const mid = (x1 + x2) / 2;
          p.setAttribute("d", `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`);
        }
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

export function renderNodes() {
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
    // A streaming step shows its answer as it is written, until the step ends.
    const text = streams.get(n.path);
    let live = e.querySelector<HTMLElement>(":scope > .stream-text");
    if (text === undefined) live?.remove();
    else {
      if (!live) {
        live = document.createElement("pre");
        live.className = "stream-text";
        e.appendChild(live);
      }
      if (live.textContent !== text) live.textContent = text;
    }
  }
}
