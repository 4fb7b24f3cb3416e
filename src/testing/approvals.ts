/**
 * Human approvals in a workflow test case. The run object's own `ApprovalBook` keeps them (same
 * ids, masking, `expires_at`, timeouts, decision rules), in memory; the reviewer is the case's
 * `approvals`: by `<step path>/tools/<tool>` (a gated tool call) or `<step path>/needs_human`
 * (an output with `ktsu_needs_human`), one decision per approval for a list, keyed like mocks (a
 * fan-out item's index may be left out).
 *
 * A decision arrives `after_s` virtual seconds after the request (default at once); `timeout`
 * means nobody decides, so the approval's own timeout passes on the virtual clock (as the run
 * object's alarm would expire it) or, without one, the run reaches its deadline. An approval the
 * case does not decide fails the step with `unmocked_step` instead of waiting forever.
 * `notify.url` is never called: nothing leaves the runner.
 */
import type { Json } from "../bundle.ts";
import type { ApprovalDecision, ApprovalSpec } from "../compiler/test-files.ts";
import type { Clock } from "../engine/clock.ts";
import type { Masker } from "../engine/mask.ts";
import type { ApprovalHost, StepError, StepRecord } from "../engine/types.ts";
import { ApprovalBook, type ApprovalRecord, approvalId, publicApproval } from "../run/approvals.ts";
import { mockKeyFor } from "./mock-keys.ts";

export interface CaseApprovals {
  host(path: string): ApprovalHost;
  /** At the end of the run: what is still pending is closed as `timeout`, as the run object does. */
  close(): void;
  /** Every approval of the run, as `GET /runs/{id}/approvals` lists them. */
  list(): Json[];
}

export function caseApprovals(opts: {
  approvals: Record<string, ApprovalSpec>;
  runId: string;
  deadline: number;
  masker: Masker;
  clock: Clock;
  records: Map<string, StepRecord>;
  unmocked(message: string): StepError;
}): CaseApprovals {
  const { clock, records } = opts;
  const rows = new Map<string, ApprovalRecord>();
  const planned = new Map<string, ApprovalDecision>();
  const asked = new Map<string, number>();
  const book = new ApprovalBook(
    { get: (id) => rows.get(id), put: (rec) => rows.set(rec.id, rec), all: () => [...rows.values()] },
    {
      runId: opts.runId,
      deadline: opts.deadline,
      masker: opts.masker,
      now: () => clock.now(),
      origin: null,
      allowPrivate: false,
      fetch: () => Promise.reject(new Error("workflow tests send no notifications")),
      requested: (rec, created) => {
        const step = records.get(rec.step);
        if (step?.status === "running") step.status = "pending_approval";
        const decision = planned.get(rec.id);
        if (!created || !decision) return;
        const now = clock.now();
        // The run object's alarm expires an approval at its own timeout.
        if (rec.own_timeout) clock.setTimer(() => book.expire(clock.now()), Date.parse(rec.expires_at) - now);
        if (decision.decision !== "timeout") {
          const status = decision.decision;
          clock.setTimer(() => book.decide(rec.id, status, decision.comment), decision.after_s * 1000);
        }
      },
      decided: (rec) => {
        const step = records.get(rec.step);
        const waiting = [...rows.values()].some((a) => a.step === rec.step && a.status === "pending");
        if (step?.status === "pending_approval" && !waiting) step.status = "running";
      },
    },
  );

  return {
    host: (path) => ({
      async request(req, signal) {
        const at = req.kind === "tool" ? `${path}/tools/${req.tool}` : `${path}/needs_human`;
        const what =
          req.kind === "tool"
            ? `the call of \`${req.tool}\` by \`${path}\` waits for a human`
            : `the output of \`${path}\` waits for a human review (ktsu_needs_human)`;
        const key = mockKeyFor(Object.keys(opts.approvals), at);
        const spec = key === null ? undefined : opts.approvals[key];
        if (!spec) {
          throw opts.unmocked(`${what}: decide it under the case's \`approvals\` (\`${at}: approved\`)`);
        }
        const n = asked.get(at) ?? 0;
        asked.set(at, n + 1);
        const decision = spec.repeat ? spec.decisions[0] : spec.decisions[n];
        if (!decision) {
          throw opts.unmocked(
            `${what} (approval ${n + 1}), but \`approvals\` lists ${spec.decisions.length} decision${spec.decisions.length === 1 ? "" : "s"} for \`${key}\``,
          );
        }
        planned.set(await approvalId(opts.runId, path, req.key), decision);
        return book.request(path, { ...req, notify: null }, signal);
      },
    }),
    close() {
      for (const a of book.pending()) book.decide(a.id, "timeout", null);
    },
    list: () => book.list().map((a) => publicApproval(a) as unknown as Json),
  };
}
