/**
 * While the workflows do not build under `npm start` (docs/errors-and-limits.md, `build_failed`):
 * the dev build keeps the last good bundle and notes the errors in it, and every request gets
 * 503 `build_failed` at once, each error at its `file:line:col`, instead of a request held until
 * the file is fixed or a bundle that no longer matches the files.
 */
import type { Bundle } from "../bundle.ts";
import { HttpProblem, type ProblemDetail } from "../common/problem.ts";
import { buildFailedPage } from "../viewer/build-failed-page.ts";

/** The problem every request is answered with while the build fails; null when it passes. */
export function buildFailed(bundle: Pick<Bundle, "buildErrors">): HttpProblem | null {
  const errors = bundle.buildErrors;
  if (!errors || errors.length === 0) return null;
  const details: ProblemDetail[] = errors.map((line) => {
    // `workflows/a.workflow.yaml:3:7: unknown field …` -> path `workflows/a.workflow.yaml:3:7`.
    const m = /^(.*?:\d+:\d+): (.*)$/s.exec(line);
    return m ? { path: m[1] as string, message: m[2] as string } : { path: "", message: line };
  });
  return new HttpProblem(
    "build_failed",
    `the workflows do not build (${errors.length} error${errors.length === 1 ? "" : "s"}): fix them and save; the dev server rebuilds`,
    { errors: details, headers: { "retry-after": "1" } },
  );
}

/** A browser's page load (GET asking for HTML first) gets the errors as a page; any other request the problem+json. */
export function buildFailedAnswer(problem: HttpProblem, req: Request): Response {
  const html = req.method === "GET" && /^text\/html/.test(req.headers.get("accept") ?? "");
  return html ? buildFailedPage(problem) : problem.toResponse();
}
