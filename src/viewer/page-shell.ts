/**
 * What every viewer page shares: the HTML document around a page's markup, its security headers,
 * the stylesheet, and the client code that holds the user's credential. Pages carry no run data
 * and no secrets: the browser fetches everything from the JSON API with a credential the user
 * types, kept in sessionStorage only (never in a URL, never sent to the server except as the
 * header the workflow expects). The Content-Security-Policy allows only this response's own
 * inline script and style (by nonce) and requests to this origin.
 */

export interface PageParts {
  title: string;
  /** Static markup (no data: everything variable is filled in by the script with textContent). */
  body: string;
  /** The page's client code, bundled from src/viewer/browser/ at build time (one inline script). */
  script: string;
}

/** A fresh, unguessable nonce per response (128 random bits, base64). */
function newNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes));
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text made safe for HTML content and quoted attribute values (the server-rendered pages). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function htmlResponse(parts: PageParts): Response {
  const nonce = newNonce();
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<title>${parts.title}</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
${CREDENTIAL_FORM}
${parts.body}
<script nonce="${nonce}">
${parts.script}
</script>
</body>
</html>
`;
  return new Response(html, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": contentSecurityPolicy(nonce),
      // The nonce changes per response, so no cache may replay one.
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "x-frame-options": "DENY",
      "referrer-policy": "no-referrer",
    },
  });
}

const CREDENTIAL_FORM = `<form id="credential-form" class="credential" hidden>
  <p id="credential-reason">This workflow needs credentials.</p>
  <label>Header <input id="credential-header" name="header" value="Authorization" autocomplete="off" spellcheck="false"></label>
  <label>Value <input id="credential-value" name="value" type="password" placeholder="Bearer &lt;token&gt;" autocomplete="off"></label>
  <button type="submit">Use</button>
  <button type="button" id="credential-forget">Forget</button>
  <small>Kept in this tab's sessionStorage only.</small>
</form>`;

const STYLE = `
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1f24; --muted: #6a737d; --line: #d0d7de; --panel: #f6f8fa;
  --pending: #8c959f; --running: #0969da; --complete: #1a7f37; --failed: #cf222e; --skipped: #bf8700; --canceled: #8250df; --waiting: #bc4c00; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --panel: #161b22; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 1rem 1.5rem 3rem; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--fg); }
h1 { font-size: 1.3rem; margin: 0 0 .25rem; } h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .6rem; overflow: auto; max-height: 24rem; margin: .25rem 0 .75rem; white-space: pre-wrap; word-break: break-word; }
a { color: var(--running); }
.muted { color: var(--muted); }
.notice { padding: .6rem .8rem; border-radius: 6px; border: 1px solid var(--line); background: var(--panel); margin: .75rem 0; }
.notice[data-kind="error"] { border-color: var(--failed); }
.credential { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; padding: .75rem; margin: 0 0 1rem; border: 1px solid var(--running); border-radius: 6px; background: var(--panel); }
details.run > summary { cursor: pointer; color: var(--running); }
.run-form { display: grid; gap: .5rem; padding: .75rem; margin: .5rem 0 1rem; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); max-width: 40rem; }
.rf-field { display: grid; gap: .15rem; } .rf-field input, .rf-field select, .rf-field textarea { font: inherit; padding: .2rem .4rem; }
.rf-field .help { color: var(--muted); } .field-error, .run-form-notice { color: var(--failed); }
.credential[hidden] { display: none; } .credential p { flex-basis: 100%; margin: 0; }
.credential input { font: inherit; padding: .2rem .4rem; min-width: 14rem; }
.status { display: inline-block; padding: 0 .5rem; border-radius: 1rem; color: #fff; background: var(--pending); font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
[data-status="running"] > .status, .status[data-status="running"] { background: var(--running); }
[data-status="complete"] > .status, .status[data-status="complete"] { background: var(--complete); }
[data-status="failed"] > .status, .status[data-status="failed"] { background: var(--failed); }
[data-status="skipped"] > .status, .status[data-status="skipped"] { background: var(--skipped); }
[data-status="canceled"] > .status, .status[data-status="canceled"] { background: var(--canceled); }
.summary { display: flex; flex-wrap: wrap; gap: .25rem 1.5rem; margin: .5rem 0; }
.summary div { display: flex; flex-direction: column; } .summary dt { color: var(--muted); font-size: 12px; } .summary dd { margin: 0; }
.layout { display: grid; grid-template-columns: minmax(0, 1fr) minmax(16rem, 24rem); gap: 1.5rem; align-items: start; }
@media (max-width: 900px) { .layout { grid-template-columns: 1fr; } }
.graph { position: relative; display: flex; gap: 1.75rem; align-items: flex-start; padding: .75rem; overflow-x: auto; }
.graph > svg.edges { position: absolute; left: 0; top: 0; pointer-events: none; overflow: visible; }
.graph > svg.edges path { fill: none; stroke: var(--muted); stroke-width: 1.5; }
.column { display: flex; flex-direction: column; gap: .6rem; position: relative; z-index: 1; }
.node { border: 2px solid var(--pending); border-radius: 8px; background: var(--bg); min-width: 7.5rem; }
.node > .node-head { display: flex; flex-direction: column; align-items: flex-start; gap: .15rem; width: 100%; padding: .4rem .6rem; font: inherit; color: inherit; background: none; border: 0; text-align: left; cursor: pointer; }
.node > .node-head:focus-visible { outline: 2px solid var(--running); outline-offset: 2px; }
.node .kind { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.node .node-id { font-weight: 600; }
.node .status { margin: 0 .6rem .45rem; }
.node[data-status="running"] { border-color: var(--running); animation: pulse 1.2s ease-in-out infinite; }
.node[data-status="complete"] { border-color: var(--complete); }
.node[data-status="failed"] { border-color: var(--failed); }
.node[data-status="skipped"] { border-color: var(--skipped); border-style: dashed; opacity: .75; }
.node[data-status="canceled"] { border-color: var(--canceled); border-style: dotted; }
.node[aria-pressed="true"], .node.selected { box-shadow: 0 0 0 3px color-mix(in srgb, var(--running) 35%, transparent); }
.node > .graph { border-top: 1px dashed var(--line); margin: 0 .4rem .4rem; padding: .5rem; }
@keyframes pulse { 50% { box-shadow: 0 0 0 4px color-mix(in srgb, var(--running) 25%, transparent); } }
@media (prefers-reduced-motion: reduce) { .node[data-status="running"] { animation: none; } }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: middle; white-space: nowrap; }
th { font-weight: 600; color: var(--muted); font-size: 12px; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.timeline td.bar-cell { width: 40%; min-width: 10rem; }
.track { position: relative; height: .9rem; background: var(--panel); border-radius: 3px; }
.bar { position: absolute; top: 0; bottom: 0; min-width: 2px; border-radius: 3px; background: var(--pending); }
.bar[data-status="running"] { background: var(--running); } .bar[data-status="complete"] { background: var(--complete); }
.bar[data-status="failed"] { background: var(--failed); } .bar[data-status="canceled"] { background: var(--canceled); }
.timeline tr { cursor: pointer; } .timeline tr.selected td { background: var(--panel); }
.details { position: sticky; top: 1rem; border: 1px solid var(--line); border-radius: 8px; padding: .25rem 1rem 1rem; }
.node .items { font-size: 11px; color: var(--muted); }
#workflows td { white-space: normal; overflow-wrap: anywhere; } #workflows td:first-child { white-space: nowrap; }
.items-box { overflow-x: auto; } .items-table { font-size: 12.5px; }
.items-table tr { cursor: pointer; } .items-table th, .items-table td { padding: .2rem .35rem; }
.details dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .75rem; margin: .5rem 0; } .details dt { color: var(--muted); } .details dd { margin: 0; }
[data-status="pending_approval"] > .status, .status[data-status="pending_approval"], .status[data-status="pending"].approval-status { background: var(--waiting); }
.status[data-status="approved"] { background: var(--complete); } .status[data-status="rejected"] { background: var(--failed); } .status[data-status="timeout"] { background: var(--canceled); }
.node[data-status="pending_approval"] { border-color: var(--waiting); border-width: 2px; }
[data-status="waiting"] > .status, .status[data-status="waiting"], .status[data-status="queued"] { background: var(--waiting); }
.node[data-status="waiting"] { border-color: var(--waiting); border-width: 2px; }
.bar[data-status="waiting"] { background: var(--waiting); }
.run-actions button, .step-actions button, .signal-form button { margin-right: .5em; }
.signal-form textarea { width: 100%; min-height: 4em; font-family: var(--mono, monospace); }
.bar[data-status="pending_approval"] { background: var(--waiting); }
.approvals { border: 2px solid var(--waiting); border-radius: 8px; padding: .25rem 1rem .75rem; margin: 1rem 0; }
.approvals[hidden] { display: none; }
.deliveries { border: 1px solid var(--line); border-radius: 8px; padding: .25rem 1rem .75rem; margin: 1rem 0; }
.deliveries[hidden] { display: none; }
.stream-text { white-space: pre-wrap; font-size: .85em; margin: .25rem 0 0; max-height: 12em; overflow: auto; }
.delivery { border-top: 1px solid var(--line); padding: .5rem 0; } .delivery:first-child { border-top: 0; }
.delivery .attempts { margin: .25rem 0; font-size: .9em; }
.approval { border-top: 1px solid var(--line); padding: .5rem 0; } .approval:first-child { border-top: 0; }
.approval-actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: .25rem 0; }
.approval-actions input { font: inherit; padding: .2rem .4rem; min-width: 14rem; flex: 1; }
.approval-actions button { font: inherit; padding: .2rem .8rem; border-radius: 6px; border: 1px solid var(--line); cursor: pointer; }
.approval-actions button[data-decision="approved"] { background: var(--complete); color: #fff; }
.approval-actions button[data-decision="rejected"] { background: var(--failed); color: #fff; }
#run-id { overflow-wrap: anywhere; } .mono { overflow-wrap: break-word; }
.build-errors li { margin: .3rem 0; overflow-wrap: anywhere; }
@media (max-width: 900px) { .layout { grid-template-columns: minmax(0, 1fr); } .details { position: static; } }
@media (max-width: 640px) {
  body { padding: .75rem .75rem 2rem; }
  .credential input, .approval-actions input { min-width: 0; width: 100%; }
  .graph { flex-direction: column; gap: 1.25rem; }
  .column { flex-direction: row; flex-wrap: wrap; }
  .node { min-width: 0; max-width: 100%; }
  .node > .graph { margin: 0 .25rem .25rem; padding: .4rem; }
  .timeline th:nth-child(n+5), .timeline td:nth-child(n+5) { display: none; }
  .timeline td.bar-cell { min-width: 4rem; }
  .timeline th, .timeline td, #runs th, #runs td { padding: .3rem .25rem; }
  .timeline td:first-child, #runs td:first-child { white-space: normal; overflow-wrap: anywhere; min-width: 6rem; }
  #runs td:first-child .mono { overflow-wrap: anywhere; }
  #runs th:nth-child(4), #runs td:nth-child(4) { display: none; }
  #runs td, #runs th { white-space: normal; }
  #workflows thead { display: none; }
  #workflows, #workflows tbody, #workflows tr, #workflows td { display: block; width: 100%; }
  #workflows tr { border-bottom: 1px solid var(--line); padding: .5rem 0; }
  #workflows td { border: 0; padding: .1rem 0; white-space: normal; }
  #workflows td:first-child { font-size: 1.05rem; }
  #workflows td:empty { display: none; }
  #workflows td[data-label]::before { content: attr(data-label) " "; color: var(--muted); font-family: system-ui, sans-serif; }
}
`;

/** The pages' icon (a small flow of three steps), served as /favicon.svg and /favicon.ico. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0969da"/><circle cx="8" cy="16" r="4" fill="#fff"/><circle cx="24" cy="9" r="4" fill="#fff"/><circle cx="24" cy="23" r="4" fill="#fff"/><path d="M11 15l9-5M11 17l9 5" stroke="#fff" stroke-width="2"/></svg>`;

export function faviconResponse(): Response {
  return new Response(FAVICON_SVG, {
    headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" },
  });
}
