/**
 * What a failed or canceled run undid (docs/file-format.md, "Compensation"): each compensation in
 * the order it ran, with its status, attempts and error, live while the phase runs, and a button
 * that tries the failed ones once more (POST /runs/{id}/compensate).
 */
import { apiFetch, byId, el, formatTime, problemText, showNotice } from "../common.ts";
import { envelope, runPath } from "./state.ts";

/** A compensation event (its progress record) applied to the envelope the page holds. */
export function applyCompensationEvent(ev) {
  if (!envelope) return;
  const comp = envelope.compensation || { status: "running", steps: [] };
  const i = comp.steps.findIndex((s) => s.step === ev.step);
  const st = {
    step: ev.step,
    status: ev.status,
    attempts: ev.attempts,
    error: ev.error,
    started_at: ev.started_at,
    finished_at: ev.finished_at,
  };
  if (i >= 0) comp.steps[i] = st;
  else comp.steps.push(st);
  envelope.compensation = comp;
}

export function renderCompensation() {
  const comp = envelope?.compensation;
  const section = byId("compensation");
  if (!comp) {
    section.hidden = true;
    return;
  }
  byId("compensation-status").textContent = comp.status;
  byId("compensation-status").dataset.status = comp.status === "running" ? "running" : comp.status;
  byId("compensation-list").replaceChildren(
    ...comp.steps.map((s) =>
      el(
        "li",
        { class: "compensation", "data-step": s.step, "data-status": s.status },
        el(
          "span",
          { class: "status", "data-status": s.status === "pending" ? "pending" : s.status },
          s.status,
        ),
        " ",
        el("span", { class: "mono" }, s.step),
        s.attempts
          ? el("small", { class: "muted" }, ` ${s.attempts} attempt${s.attempts === 1 ? "" : "s"}`)
          : "",
        s.finished_at ? el("small", { class: "muted" }, ` ${formatTime(s.finished_at)}`) : "",
        s.error ? el("div", { class: "error-text" }, `${s.error.code}: ${s.error.message}`) : "",
      ),
    ),
  );
  byId("compensate-run").hidden = !comp.steps.some((s) => s.status === "failed") || comp.status === "running";
  section.hidden = false;
}

export async function retryCompensation() {
  const res = await apiFetch(`${runPath}/compensate`, { method: "POST" });
  if (!res.ok) {
    showNotice(await problemText(res), "error");
    return;
  }
  const body = await res.json();
  showNotice(`Trying ${body.retried} failed compensation${body.retried === 1 ? "" : "s"} again.`);
}
