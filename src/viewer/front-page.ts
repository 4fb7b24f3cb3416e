/**
 * The front page (docs/cli.md): `GET /` lists every invocable workflow with its description, version,
 * triggers (auth scheme, schedules, queue, email addresses, the protocols it is served by) and links to its runs, as JSON to `Accept: application/json`
 * and as an HTML page to a browser. It needs no credentials and shows none: no secret, no header
 * value, no parameter; reading the runs it links to still needs each workflow's credentials.
 *
 * Elements tests rely on: `#workflows tr[data-workflow="<name>"]` with `a.runs-link`, and its Run
 * form (`details.run form.run-form`, run-form.ts).
 */
import type { Bundle } from "../bundle.ts";
import { FRONT_PAGE_SCRIPT } from "../generated/viewer-scripts.ts";
import { isPaused, type PausedEntry } from "../triggers/cron/schedule-state.ts";
import { escapeHtml, htmlResponse } from "./page-shell.ts";
import { runFormHtml } from "./run-form.ts";

export interface FrontPageWorkflow {
  name: string;
  description: string | null;
  version: string | null;
  auth: string;
  schedules: string[];
  /** The same entries with their index, zone and whether an operator paused them. */
  schedule_entries: Array<{ index: number; cron: string; timezone: string; paused: boolean }>;
  /** `invoke.queue` (docs/triggers.md, "Queues"). */
  queue: string | null;
  /** `invoke.email.to`: the addresses whose mail starts a run ([] when none). */
  email: string[];
  /** The protocols it is served by (docs/protocols.md): where a client points, and under which name. */
  protocols: {
    chat: { base_url: string; model: string } | null;
    mcp: { url: string; tool: string } | null;
    a2a: { url: string; agent_card: string } | null;
  };
  runs_url: string;
  view_url: string;
}

/** Which entries of a workflow's schedule are paused (read only for a workflow with a schedule). */
export type PausedOf = (workflow: string) => Promise<PausedEntry[]>;

export async function frontPageWorkflows(bundle: Bundle, pausedOf: PausedOf): Promise<FrontPageWorkflow[]> {
  const entries = Object.entries(bundle.invocable).sort(([a], [b]) => a.localeCompare(b));
  const paused = await Promise.all(
    entries.map(([, key]) => {
      const wf = bundle.workflows[key];
      return wf && wf.schedule.length > 0 ? pausedOf(wf.name) : Promise.resolve([]);
    }),
  );
  return entries.flatMap(([name, key], i) => {
    const wf = bundle.workflows[key];
    if (!wf) return [];
    const off = paused[i] ?? [];
    const q = encodeURIComponent(name);
    return [
      {
        name,
        description: wf.description,
        version: wf.version,
        auth: wf.auth ? wf.auth.scheme : "none",
        schedules: wf.schedule.map((s) => s.cron),
        schedule_entries: wf.schedule.map((s, index) => ({
          index,
          cron: s.cron,
          timezone: s.timezone,
          paused: isPaused(off, index, s),
        })),
        queue: wf.queue ?? null,
        email: wf.email?.to ?? [],
        protocols: {
          chat: wf.chat ? { base_url: "/v1", model: name } : null,
          mcp: wf.mcp ? { url: "/mcp", tool: name } : null,
          a2a: wf.a2a ? { url: `/a2a/${q}`, agent_card: `/a2a/${q}/.well-known/agent-card.json` } : null,
        },
        runs_url: `/runs?workflow=${q}`,
        view_url: `/view/runs?workflow=${q}`,
      },
    ];
  });
}

const esc = escapeHtml;

/** One line per way the workflow starts besides `POST /invoke/{name}`. */
function triggerLines(w: FrontPageWorkflow): string {
  const lines = [
    ...w.schedule_entries.map(
      (e) => `cron ${e.cron}${e.timezone === "UTC" ? "" : ` ${e.timezone}`}${e.paused ? " (paused)" : ""}`,
    ),
    ...(w.queue ? [`queue ${w.queue}`] : []),
    ...(w.email.length > 0 ? [`email ${w.email.join(", ")}`] : []),
    ...(w.protocols.chat ? [`chat model ${w.protocols.chat.model} at ${w.protocols.chat.base_url}`] : []),
    ...(w.protocols.mcp ? [`MCP tool ${w.protocols.mcp.tool} at ${w.protocols.mcp.url}`] : []),
    ...(w.protocols.a2a ? [`A2A agent at ${w.protocols.a2a.url}`] : []),
  ];
  return lines.map((l) => `<div>${esc(l)}</div>`).join("");
}

export async function frontPage(bundle: Bundle, wantsJson: boolean, pausedOf: PausedOf): Promise<Response> {
  const workflows = await frontPageWorkflows(bundle, pausedOf);
  if (wantsJson) return Response.json({ workflows });
  // The Run forms are HTML only: built for the page, not for the JSON answer.
  const forms = new Map(
    Object.entries(bundle.invocable).map(([name, key]) => {
      const wf = bundle.workflows[key];
      return [name, wf ? runFormHtml(wf) : ""] as const;
    }),
  );
  const rows = workflows
    .map(
      (w) => `<tr data-workflow="${esc(w.name)}">
  <td><a class="runs-link" href="${esc(w.view_url)}">${esc(w.name)}</a></td>
  <td data-label="version">${esc(w.version ?? "")}</td>
  <td>${esc(w.description ?? "")}</td>
  <td class="mono" data-label="auth">${esc(w.auth)}</td>
  <td class="mono triggers" data-label="triggers">${triggerLines(w)}</td>
  <td><details class="run"><summary>Run</summary>${forms.get(w.name) ?? ""}</details></td>
</tr>`,
    )
    .join("\n");
  const body = `<header>
  <h1>Workflows</h1>
  <p class="muted">Every workflow this deployment serves: <code>POST /invoke/{name}</code>. Reading a workflow's runs needs its credentials. <a href="/openapi.json">OpenAPI</a></p>
</header>
<table id="workflows">
  <thead><tr><th>Workflow</th><th>Version</th><th>Description</th><th>Auth</th><th>Triggers</th><th></th></tr></thead>
  <tbody>
${rows}
  </tbody>
</table>`;
  return htmlResponse({ title: "Workflows", body, script: FRONT_PAGE_SCRIPT });
}
