/**
 * A run can be acted on from its page, with the workflow's credentials asked for like Approve
 * asks: cancel an active run, re-run a finished one (whole, or from the selected step) and send a
 * waiting step its signal (docs/http-api.md). Which of them fits depends on the run's state.
 */
import { apiFetch, byId, problemText, showNotice } from "../common.ts";
import { envelope, isActive, load, nodes, runPath, selected } from "./state.ts";

export function renderActions() {
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
