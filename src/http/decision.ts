/**
 * The body of an approval decision: `{"decision": "approved" | "rejected", "comment"?: string}`.
 * Anything else is 400 `invalid_decision` (a body that is not JSON too: the caller meant to decide
 * and said nothing we can act on).
 */

import { HttpProblem } from "../common/problem.ts";
import { readObjectBody } from "../triggers/request-body.ts";

/** Longest comment kept with an approval. */
export const MAX_COMMENT_CHARS = 2000;

export async function readDecision(
  req: Request,
): Promise<{ decision: "approved" | "rejected"; comment: string | null }> {
  const body = await readObjectBody(
    req,
    () =>
      new HttpProblem(
        "invalid_decision",
        'the body must be a JSON object {"decision": "approved" | "rejected"}',
      ),
  );
  const { decision, comment } = body;
  if (decision !== "approved" && decision !== "rejected") {
    throw new HttpProblem("invalid_decision", '`decision` must be "approved" or "rejected"', {
      errors: [{ path: "/decision", message: 'must be "approved" or "rejected"' }],
    });
  }
  if (comment !== undefined && comment !== null && typeof comment !== "string") {
    throw new HttpProblem("invalid_decision", "`comment` must be a string", {
      errors: [{ path: "/comment", message: "must be a string" }],
    });
  }
  if (typeof comment === "string" && comment.length > MAX_COMMENT_CHARS) {
    throw new HttpProblem("invalid_decision", `\`comment\` is longer than ${MAX_COMMENT_CHARS} characters`, {
      errors: [{ path: "/comment", message: `must be at most ${MAX_COMMENT_CHARS} characters` }],
    });
  }
  return { decision, comment: typeof comment === "string" && comment !== "" ? comment : null };
}
