/**
 * Browser code shared by the viewer's pages: the credential (sessionStorage only), a fetch that
 * asks for it on 401 and retries, and small DOM builders that only ever set textContent and
 * attributes. Bundled into each page's script at build time (scripts/build.ts).
 */
/**
 * An element the page's own HTML renders, by id. Typed as a form field by default (the pages
 * read `value` and `disabled` of most); name the type for anything else.
 */
export function byId<T extends HTMLElement = HTMLInputElement>(id: string): T {
  return document.getElementById(id) as T;
}

const CREDENTIAL_KEY = "workflow-edge.credential";
const credentialForm = byId("credential-form");
let credentialWaiters = [];

export function storedCredential() {
  try {
    const c = JSON.parse(sessionStorage.getItem(CREDENTIAL_KEY) || "null");
    return c && typeof c.header === "string" && typeof c.value === "string" ? c : null;
  } catch {
    return null;
  }
}

export function credentialHeaders() {
  const c = storedCredential();
  return c ? { [c.header]: c.value } : {};
}

export function askCredential(reason) {
  byId("credential-reason").textContent = reason;
  const c = storedCredential();
  if (c) byId("credential-header").value = c.header;
  credentialForm.hidden = false;
  byId("credential-value").focus();
  return new Promise((resolve) => credentialWaiters.push(resolve));
}

credentialForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const header = byId("credential-header").value.trim() || "Authorization";
  const value = byId("credential-value").value;
  sessionStorage.setItem(CREDENTIAL_KEY, JSON.stringify({ header, value }));
  byId("credential-value").value = "";
  credentialForm.hidden = true;
  const waiters = credentialWaiters;
  credentialWaiters = [];
  for (const w of waiters) w();
});

byId("credential-forget").addEventListener("click", () => {
  sessionStorage.removeItem(CREDENTIAL_KEY);
  byId("credential-value").value = "";
});

/** GET with the stored credential; on 401 asks the user and tries again. Other statuses are returned. */
export async function apiFetch(path: string, init?: RequestInit) {
  for (;;) {
    let res: Response;
    try {
      res = await fetch(path, {
        cache: "no-store",
        ...init,
        headers: { ...credentialHeaders(), ...(init?.headers || {}) },
      });
    } catch (err) {
      if (err && err.name === "AbortError") throw err;
      if (err instanceof TypeError && storedCredential()) {
        // An unusable header name or value: fetch refuses it before sending anything.
        await askCredential(
          `That header could not be sent (${err.message}). Check the header name and value.`,
        );
        continue;
      }
      throw err;
    }
    if (res.status !== 401) return res;
    await askCredential(
      storedCredential()
        ? "Those credentials were refused. Enter the credentials of this workflow."
        : "This workflow needs credentials (for example header Authorization, value Bearer <token>).",
    );
  }
}

export async function problemText(res) {
  try {
    const p = await res.json();
    return (p.title || res.status) + (p.detail ? `: ${p.detail}` : "");
  } catch {
    return `HTTP ${res.status}`;
  }
}

export function el(
  tag: string,
  attrs?: Record<string, unknown> | null,
  ...children: unknown[]
): HTMLInputElement {
  const e = document.createElement(tag) as HTMLInputElement;
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = String(v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

export function showNotice(text: string | null, kind?: string) {
  const n = byId("notice");
  n.hidden = !text;
  n.textContent = text || "";
  n.dataset.kind = kind || "info";
}

export function formatMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function formatUsd(x) {
  if (typeof x !== "number") return "";
  return `$${x === 0 ? "0" : x < 0.01 ? x.toPrecision(3) : x.toFixed(4)}`;
}

export function formatTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}
