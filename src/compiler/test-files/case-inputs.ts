/**
 * A case's params, env and request headers are what its run starts from: a param the schema
 * refuses, an env name the run cannot read or a header it does not record would test a run that
 * can never happen, so each is checked against the workflow under test.
 */
import type { Bundle, CompiledWorkflow } from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { validateJson, violationText } from "../../engine/schema.ts";
import { collectSecrets, usesAgents } from "../../engine/secrets.ts";
import type { DataPath } from "../yaml-source.ts";
import type { CaseAt, Report } from "./report.ts";
import type { TestCase } from "./suite.ts";

/** Worker variables a case may set besides the declared env (they change how a run behaves). */
const WORKER_VARS = ["ALLOW_PRIVATE_WEBHOOKS"];

/** The case's `params`, `env` and `request.headers` against workflow `w`. */
export function checkCaseInputs(
  bundle: Omit<Bundle, "hash">,
  w: CompiledWorkflow,
  tc: TestCase,
  at: CaseAt,
  err: Report,
  warn: Report,
): void {
  // A batch run's params are its invokes' params, each of which passed the schema.
  const schema = w.invoke.batch
    ? { type: "object", required: ["items"], properties: { items: { type: "array", items: w.paramsSchema } } }
    : w.paramsSchema;
  for (const v of validateJson(schema, tc.params)) {
    const segs = v.path
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    err([...at("params"), ...segs], `params do not match \`${w.name}\`'s params.schema: ${violationText(v)}`);
  }
  const known = new Set([...w.env.map((e) => e.name), ...WORKER_VARS]);
  if (usesAgents(bundle as Bundle, w)) for (const e of bundle.gateway.env) known.add(e.name);
  for (const k of Object.keys(tc.env)) {
    if (!known.has(k)) {
      warn(
        at("env", k),
        `\`${k}\` is not declared by \`${w.name}\`${usesAgents(bundle as Bundle, w) ? " or gateway.yaml" : ""}: the run cannot read it${hint(k, known)}`,
        "key",
      );
    }
  }
  for (const n of collectSecrets(bundle as Bundle, w, tc.env).tooShort) {
    err(
      at("env", n),
      `\`${n}\` is a secret shorter than 8 characters; the Worker would refuse the run (500 server_misconfigured)`,
    );
  }
  if (tc.requestHeaders !== null)
    checkRequestHeaders(w, tc.requestHeaders, at("request", "headers"), err, warn);
}

/**
 * `request.headers`: the workflow must record them (`invoke.headers`, docs/triggers.md); without a
 * declaration the run cannot read them.
 */
function checkRequestHeaders(
  wf: CompiledWorkflow,
  headers: Record<string, string>,
  path: DataPath,
  err: Report,
  warn: Report,
): void {
  const declared = wf.invoke.headers;
  if (declared.length === 0) {
    warn(
      path,
      `\`request.headers\` has no effect: workflow \`${wf.name}\` records no request headers`,
      "key",
    );
    return;
  }
  const names = declared.map((h) => h.name.toLowerCase());
  for (const name of Object.keys(headers)) {
    if (!names.includes(name.toLowerCase())) {
      err(
        [...path, name],
        `header \`${name}\` is not in \`${wf.name}\`'s \`invoke.headers\`${hint(name, names)}`,
        "key",
      );
    }
  }
}
