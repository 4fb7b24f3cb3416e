/**
 * Why the run layer refuses what it is asked (a run that does not exist, one still active, inputs
 * that do not match): a control-flow error with a stable code from a closed list, which the HTTP
 * face answers as application/problem+json (src/common/problem.ts maps each code to its status; the
 * table of codes is in docs/errors-and-limits.md). The run layer never builds HTTP answers.
 */
import type { ProblemCode } from "../common/problem.ts";

/** Only problem codes (src/common/problem.ts): a refusal the problem table lacks does not compile. */
type ProblemCodes<T extends ProblemCode> = T;

export type RefusalCode = ProblemCodes<
  | "workflow_not_found"
  | "run_not_found"
  | "run_active"
  | "nothing_to_rerun"
  | "unknown_step"
  | "invalid_params"
  | "server_misconfigured"
  | "internal_error"
>;

export class RunRefusal extends Error {
  readonly code: RefusalCode;
  /** What to fix, each at a JSON Pointer into the request body (e.g. params that fail the schema). */
  readonly errors: Array<{ path: string; message: string }> | undefined;

  constructor(code: RefusalCode, detail: string, errors?: Array<{ path: string; message: string }>) {
    super(detail);
    this.name = "RunRefusal";
    this.code = code;
    this.errors = errors;
  }
}
