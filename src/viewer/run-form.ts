/**
 * The "Run" form (docs/http-api.md, "Run from the page"): built from a workflow's `params.schema`, a
 * field per property named as the property (`name="<property>"`): a string as text, a number or
 * integer as a number, a boolean and an `enum` as a select, an object or array as JSON text; the
 * property's `description` as help, required ones marked. A schema without properties gets one
 * JSON text field for the whole body (`name="body"`). The page's script (browser/run-form.ts)
 * sends it to `POST /invoke/{name}` with the page's credential, shows the problem's `errors[]`
 * beside their fields, and opens the run's page. A workflow whose senders sign (`invoke.auth`
 * a signature scheme) gets no form: only its sender can start it.
 *
 * A field's id is unique on the page however many forms it holds (`rf-<workflow>-<property>`,
 * each part with every character but letters and digits escaped), and the schema's `minimum`,
 * `maximum`, `minLength`, `maxLength` and `pattern` become the input's own constraints, so the
 * browser marks a value the invoke would refuse before it is sent.
 *
 * Elements tests rely on: `form.run-form[data-workflow]`, its fields by `name`,
 * `[data-error-for="<property>"]` (and `""` for the body as a whole), `.run-form-notice`.
 */
import { type CompiledWorkflow, isSignature } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { escapeHtml } from "./page-shell.ts";

const esc = escapeHtml;

type Kind = "string" | "number" | "integer" | "boolean" | "enum" | "json";

function kindOf(schema: Record<string, unknown>): Kind {
  if (Array.isArray(schema.enum)) return "enum";
  const types = (Array.isArray(schema.type) ? schema.type : [schema.type]).filter((t) => t !== "null");
  const t = types.length === 1 ? types[0] : undefined;
  if (t === "string" || t === "number" || t === "integer" || t === "boolean") return t;
  return "json";
}

/** A name as a part of an id: letters and digits as they are, any other character as `_<hex>_`. */
function idPart(name: string): string {
  return name.replace(/[^A-Za-z0-9]/g, (c) => `_${(c.codePointAt(0) ?? 0).toString(16)}_`);
}

/** The input's own constraints from the property's schema (numbers' bounds, strings' lengths and pattern). */
function constraints(kind: Kind, schema: Record<string, unknown>): string {
  const out: string[] = [];
  const num = (key: string, attr: string) => {
    if (typeof schema[key] === "number") out.push(` ${attr}="${schema[key]}"`);
  };
  if (kind === "number" || kind === "integer") {
    num("minimum", "min");
    num("maximum", "max");
  }
  if (kind === "string") {
    num("minLength", "minlength");
    num("maxLength", "maxlength");
    // JSON Schema's pattern matches anywhere; an input's pattern must match the whole value.
    if (typeof schema.pattern === "string") out.push(` pattern="${esc(`.*(?:${schema.pattern}).*`)}"`);
  }
  return out.join("");
}

function field(workflow: string, name: string, schema: Record<string, unknown>, required: boolean): string {
  const kind = kindOf(schema);
  const id = `rf-${idPart(workflow)}-${idPart(name)}`;
  const req = required ? " required" : "";
  const attrs = `id="${id}" name="${esc(name)}" data-kind="${kind}"${req}${constraints(kind, schema)}`;
  let input: string;
  if (kind === "enum" || kind === "boolean") {
    const values = kind === "enum" ? (schema.enum as unknown[]) : [true, false];
    const options = values.map((v) => `<option value="${esc(JSON.stringify(v))}">${esc(String(v))}</option>`);
    input = `<select ${attrs}>${required ? "" : '<option value="">(not set)</option>'}${options.join("")}</select>`;
  } else if (kind === "json") {
    input = `<textarea ${attrs} rows="3" spellcheck="false" placeholder="JSON"></textarea>`;
  } else {
    const type = kind === "string" ? "text" : "number";
    const step = kind === "integer" ? ' step="1"' : kind === "number" ? ' step="any"' : "";
    input = `<input ${attrs} type="${type}"${step} autocomplete="off">`;
  }
  const help =
    typeof schema.description === "string" ? `<small class="help">${esc(schema.description)}</small>` : "";
  const mark = required ? ' <b title="required">*</b>' : "";
  return `<label class="rf-field" data-field="${esc(name)}"><span>${esc(name)}${mark}</span>${input}${help}<span class="field-error" data-error-for="${esc(name)}"></span></label>`;
}

/** The form for `wf`, or a note saying why there is none. */
export function runFormHtml(wf: CompiledWorkflow): string {
  if (wf.auth && isSignature(wf.auth)) {
    return `<p class="muted run-form-none">Started by its sender's signed requests (${esc(wf.auth.scheme)}): no form.</p>`;
  }
  const schema = wf.paramsSchema as Record<string, unknown>;
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [],
  );
  const names = Object.keys(props);
  const fields =
    names.length === 0
      ? `<label class="rf-field" data-field=""><span>Body (JSON)</span><textarea name="body" data-kind="body" rows="4" spellcheck="false">{}</textarea><span class="field-error" data-error-for=""></span></label>`
      : `${names.map((n) => field(wf.name, n, isObject(props[n]) ? (props[n] as Record<string, unknown>) : {}, required.has(n))).join("")}<span class="field-error" data-error-for=""></span>`;
  return `<form class="run-form" data-workflow="${esc(wf.name)}" novalidate>${fields}<div class="run-form-notice" role="status"></div><button type="submit">Run ${esc(wf.name)}</button></form>`;
}
