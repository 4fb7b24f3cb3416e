/**
 * Whoever asks why a receiver heard nothing looks here: the run's deliveries (its notifications,
 * its approval requests: docs/triggers.md, "Deliveries"), each with its state and every attempt —
 * when, the receiver's status or why none came — and when the next one is due.
 */
import { apiFetch, byId, el, formatTime } from "../common.ts";
import { envelope, runPath } from "./state.ts";

let shown = "";

export async function loadDeliveries() {
  if (!envelope?.deliveries || envelope.deliveries.length === 0) {
    byId("deliveries").hidden = true;
    return;
  }
  const res = await apiFetch(`${runPath}/deliveries`);
  if (!res.ok) return;
  const list = (await res.json()).deliveries || [];
  const text = JSON.stringify(list);
  if (text === shown) return;
  shown = text;
  byId("delivery-list").replaceChildren(
    ...list.map((d) =>
      el(
        "div",
        { class: "delivery", "data-delivery": d.id, "data-state": d.state },
        el(
          "div",
          null,
          el(
            "span",
            { class: "status", "data-status": d.state === "delivered" ? "complete" : d.state },
            d.state,
          ),
          " ",
          el("span", { class: "mono" }, d.type),
          " to ",
          el("span", { class: "mono" }, d.url),
        ),
        el(
          "ol",
          { class: "attempts" },
          ...d.attempts.map((a) =>
            el(
              "li",
              { "data-attempt-status": a.status === null ? "none" : String(a.status) },
              `${formatTime(a.at)}: ${a.error === null ? `delivered (${a.status})` : a.error}`,
            ),
          ),
        ),
        d.next_attempt_at
          ? el("small", { class: "muted" }, `Next attempt ${formatTime(d.next_attempt_at)}`)
          : "",
      ),
    ),
  );
  byId("deliveries").hidden = false;
}
