/**
 * The page a browser gets while the workflows do not build under `npm start` (docs/errors-and-limits.md,
 * `build_failed`): the same 503 and the same errors as the problem+json a client gets, each at its
 * `file:line:col`, as a page to read instead of raw JSON.
 */
import type { HttpProblem } from "../common/problem.ts";
import { escapeHtml, htmlResponse } from "./page-shell.ts";

export function buildFailedPage(problem: HttpProblem): Response {
  const errors = problem.errors ?? [];
  const items = errors
    .map((e) => `<li><code>${escapeHtml(e.path)}</code>${e.path ? ": " : ""}${escapeHtml(e.message)}</li>`)
    .join("\n");
  const page = htmlResponse({
    title: "The workflows do not build",
    body: `<main class="build-failed">
<h1>The workflows do not build</h1>
<p>${errors.length === 1 ? "1 error" : `${errors.length} errors`}. Fix ${errors.length === 1 ? "it" : "them"} and save: the dev server rebuilds, then reload this page.</p>
<ol class="build-errors">
${items}
</ol>
</main>`,
    script: "",
  });
  const headers = new Headers(page.headers);
  headers.set("retry-after", "1");
  return new Response(page.body, { status: 503, headers });
}
