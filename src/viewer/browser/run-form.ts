/**
 * The "Run" forms of a page (src/viewer/run-form.ts renders them): each field read by its kind,
 * the body sent to `POST /invoke/{name}` with the page's credential (asked for on 401, as every
 * request of the viewer), a refusal's `errors[]` shown beside their fields, and the new run's
 * page opened on success.
 */
import { apiFetch } from "./common.ts";

type Field = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

/** A field's value for the body; undefined: left out (an optional field left empty). */
function fieldValue(f: Field): unknown {
  const raw = f.value;
  const kind = f.dataset.kind;
  if (raw === "" && kind !== "body") return undefined;
  if (kind === "number" || kind === "integer") return Number(raw);
  if (kind === "enum" || kind === "boolean") return JSON.parse(raw);
  if (kind === "json" || kind === "body") return JSON.parse(raw || "{}");
  return raw;
}

function clear(form: HTMLFormElement) {
  for (const e of form.querySelectorAll<HTMLElement>(".field-error")) e.textContent = "";
  const notice = form.querySelector<HTMLElement>(".run-form-notice");
  if (notice) notice.textContent = "";
}

/** Shows `message` beside the field a JSON Pointer names (its first segment), or under the form. */
function showError(form: HTMLFormElement, pointer: string, message: string) {
  const first = pointer.split("/")[1] ?? "";
  // A missing required property is reported at the object (path ""): its field is named in the message.
  const missing = pointer === "" ? /required property "([^"]+)"/.exec(message)?.[1] : undefined;
  const name = missing ?? first.replace(/~1/g, "/").replace(/~0/g, "~");
  const at =
    [...form.querySelectorAll<HTMLElement>(".field-error")].find((e) => e.dataset.errorFor === name) ??
    form.querySelector<HTMLElement>('.field-error[data-error-for=""]');
  if (at) at.textContent = at.textContent ? `${at.textContent}; ${message}` : message;
}

async function submit(form: HTMLFormElement) {
  clear(form);
  const notice = form.querySelector<HTMLElement>(".run-form-notice");
  let body: Record<string, unknown> = {};
  let unreadable = false;
  for (const f of form.querySelectorAll<Field>("[name][data-kind]")) {
    let v: unknown;
    try {
      v = fieldValue(f);
    } catch {
      showError(form, f.dataset.kind === "body" ? "" : `/${f.name}`, "not valid JSON");
      unreadable = true;
      continue;
    }
    if (f.dataset.kind === "body") body = v as Record<string, unknown>;
    else if (v !== undefined) body[f.name] = v;
  }
  if (unreadable) return;
  const name = form.dataset.workflow ?? "";
  // `wait=0`: the answer names the run at once, whatever `invoke.response` the workflow has.
  const res = await apiFetch(`/invoke/${encodeURIComponent(name)}`, {
    method: "POST",
    headers: { "content-type": "application/json", prefer: "wait=0" },
    body: JSON.stringify(body),
  });
  const answer = await res.json().catch(() => null);
  if (res.ok && answer && typeof answer.run_id === "string") {
    location.href = `/runs/${encodeURIComponent(answer.run_id)}/view`;
    return;
  }
  const errors = Array.isArray(answer?.errors) ? answer.errors : [];
  for (const e of errors) showError(form, String(e.path ?? ""), String(e.message ?? ""));
  if (notice) notice.textContent = `${answer?.code ?? res.status}: ${answer?.detail ?? res.statusText}`;
}

/** Wires every Run form of the page. */
export function wireRunForms() {
  for (const form of document.querySelectorAll<HTMLFormElement>("form.run-form")) {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit(form).catch((err) => {
        const notice = form.querySelector<HTMLElement>(".run-form-notice");
        if (notice) notice.textContent = String(err?.message ?? err);
      });
    });
  }
}
