/**
 * The front page (docs/cli.md): `GET /` lists every invocable workflow with its description, version,
 * triggers (auth scheme, schedules, queue, email addresses) and links to its runs, as JSON to `Accept: application/json`
 * and as an HTML page to a browser. It needs no credentials and shows none: no secret, no header
 * value, no parameter; reading the runs it links to still needs each workflow's credentials.
 *
 * Elements tests rely on: `#workflows tr[data-workflow="<name>"]` with `a.runs-link`.
 */
import type { Bundle } from "../bundle.ts";
import { htmlResponse } from "./page-shell.ts";

export interface FrontPageWorkflow {
  name: string;
  description: string | null;
  version: string | null;
  auth: string;
  schedules: string[];
  /** `invoke.queue` (docs/triggers.md, "Queues"). */
  queue: string | null;
  /** `invoke.email.to`: the addresses whose mail starts a run ([] when none). */
  email: string[];
  runs_url: string;
  view_url: string;
}

export function frontPageWorkflows(bundle: Bundle): FrontPageWorkflow[] {
  return Object.entries(bundle.invocable)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([name, key]) => {
      const wf = bundle.workflows[key];
      if (!wf) return [];
      const q = encodeURIComponent(name);
      return [
        {
          name,
          description: wf.description,
          version: wf.version,
          auth: wf.auth ? wf.auth.scheme : "none",
          schedules: wf.schedule.map((s) => s.cron),
          queue: wf.queue ?? null,
          email: wf.email?.to ?? [],
          runs_url: `/runs?workflow=${q}`,
          view_url: `/view/runs?workflow=${q}`,
        },
      ];
    });
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** One line per way the workflow starts besides `POST /invoke/{name}`. */
function triggerLines(w: FrontPageWorkflow): string {
  const lines = [
    ...w.schedules.map((c) => `cron ${c}`),
    ...(w.queue ? [`queue ${w.queue}`] : []),
    ...(w.email.length > 0 ? [`email ${w.email.join(", ")}`] : []),
  ];
  return lines.map((l) => `<div>${esc(l)}</div>`).join("");
}

export function frontPage(bundle: Bundle, wantsJson: boolean): Response {
  const workflows = frontPageWorkflows(bundle);
  if (wantsJson) return Response.json({ workflows });
  const rows = workflows
    .map(
      (w) => `<tr data-workflow="${esc(w.name)}">
  <td><a class="runs-link" href="${esc(w.view_url)}">${esc(w.name)}</a></td>
  <td>${esc(w.version ?? "")}</td>
  <td>${esc(w.description ?? "")}</td>
  <td class="mono">${esc(w.auth)}</td>
  <td class="mono triggers">${triggerLines(w)}</td>
</tr>`,
    )
    .join("\n");
  const body = `<header>
  <h1>Workflows</h1>
  <p class="muted">Every workflow this deployment serves: <code>POST /invoke/{name}</code>. Reading a workflow's runs needs its credentials. <a href="/openapi.json">OpenAPI</a></p>
</header>
<table id="workflows">
  <thead><tr><th>Workflow</th><th>Version</th><th>Description</th><th>Auth</th><th>Triggers</th></tr></thead>
  <tbody>
${rows}
  </tbody>
</table>`;
  return htmlResponse({ title: "Workflows", body, script: "" });
}
