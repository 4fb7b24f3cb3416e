/**
 * The viewer's routes. The pages are static shells (no run data, no credentials needed to load
 * them); the data comes from the JSON API under the workflow's own credentials, so serving the
 * shell to anyone reveals nothing.
 *
 * A page is three pieces: its markup and route here (`<name>-page.ts`, served through
 * page-shell.ts's `htmlResponse`), its browser code in `browser/<name>-page.ts` (TypeScript,
 * importing `browser/common.ts` and, for a larger page, its parts in `browser/<name>-page/`), and
 * one line in `PAGES` of scripts/viewer-scripts.ts, which bundles it at build time into the
 * constant the page inlines.
 */
import type { Hono } from "hono";
import workflowBundle from "workflow-bundle";
import type { Bundle } from "../bundle.ts";
import { HttpProblem } from "../common/problem.ts";
import { parseRunId } from "../run/jurisdiction.ts";
import { scheduleState } from "../triggers/cron/schedule-state.ts";
import { frontPage } from "./front-page.ts";
import { faviconResponse } from "./page-shell.ts";
import { runFormHtml } from "./run-form.ts";
import { runPage, traceUrlTemplate } from "./run-page.ts";
import { runsPage } from "./runs-page.ts";

export function mountViewer(app: Hono<{ Bindings: Env }>) {
  // Browsers ask for /favicon.ico whatever the page says; both names serve the one icon.
  app.get("/favicon.svg", () => faviconResponse());
  app.get("/favicon.ico", () => faviconResponse());
  app.get("/runs/:id/view", (c) => {
    // Same shape check as the API: a page for a string that can never be a run helps nobody.
    if (!parseRunId(c.req.param("id"))) throw new HttpProblem("run_not_found", "no run with this id");
    return runPage(traceUrlTemplate(c.env));
  });
  app.get("/view/runs", (c) => {
    const bundle: Bundle = workflowBundle;
    const key = bundle.invocable[new URL(c.req.url).searchParams.get("workflow") ?? ""];
    const wf = key ? bundle.workflows[key] : undefined;
    return runsPage(wf ? runFormHtml(wf) : "");
  });
  // The front page: JSON to a client that asks for it (first), the HTML page to a browser.
  app.get("/", (c) => {
    const accept = c.req.header("accept") ?? "";
    const json = /application\/json/.test(accept) && !/^text\/html/.test(accept);
    return frontPage(workflowBundle, json, (workflow) => scheduleState(c.env, workflow).paused());
  });
}
