/**
 * A run can stop on a human's decision (a gated tool call, an agent's output for review), and the
 * reviewer is looking at the run: its approvals are listed here and decided in place, keeping a
 * comment being typed across the re-renders that live events cause.
 */
import { apiFetch, byId, el, formatTime, problemText, showNotice } from "../common.ts";
import { json } from "./details.ts";
import { runPath } from "./state.ts";

let approvalList = [];
let approvalsShown = "";
/** Comments being typed, by approval id: a re-render (a live event) must not lose them. */
const drafts = new Map();

export async function loadApprovals() {
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
