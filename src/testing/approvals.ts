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
import type { ApprovalDecision, ApprovalSpec } from "../compiler/test-files/suite.ts";
import type { Clock } from "../engine/clock.ts";
import type { ApprovalHost, StepError } from "../engine/types.ts";
import type { RunLifecycle } from "../run/lifecycle/lifecycle.ts";
import { type ApprovalRecord, approvalId } from "../run/waits/approvals.ts";
import { mockKeyFor } from "./mock-keys.ts";

export interface CaseApprovals {
  /** Wraps a step's approvals host: the case must decide every approval the step asks for. */
  host(path: string, inner: ApprovalHost): ApprovalHost;
  /** An approval started waiting: its planned decision arrives `after_s` virtual seconds later. */
  requested(rec: ApprovalRecord, created: boolean, run: RunLifecycle): void;
}

export function caseApprovals(opts: {
  approvals: Record<string, ApprovalSpec>;
  runId: string;
  clock: Clock;
  unmocked(message: string): StepError;
}): CaseApprovals {
  const { clock } = opts;
  const planned = new Map<string, ApprovalDecision>();
  const asked = new Map<string, number>();
  return {
    host: (path, inner) => ({
      async request(req, signal, waiting) {
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
        // Nothing leaves the runner: no notification is sent.
        return inner.request({ ...req, notify: null }, signal, waiting);
      },
    }),
    requested(rec, created, run) {
      const decision = planned.get(rec.id);
      if (!created || !decision || decision.decision === "timeout") return;
      // `timeout`: nobody decides; the approval's own timeout (or the deadline) passes on the
      // virtual clock, as the object's alarm would expire it.
      const status = decision.decision;
      clock.setTimer(() => run.decide({ id: rec.id }, status, decision.comment), decision.after_s * 1000);
    },
  };
}
