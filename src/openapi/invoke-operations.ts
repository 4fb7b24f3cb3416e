/**
 * API clients generated from the document call a workflow by its own operation, so each invocable
 * workflow gets a concrete `POST /invoke/<name>`: its params schema as the body, its `invoke.auth`
 * as the security scheme, its answers (the `invoke.response`, the rate limit) as the responses.
 */
import {
  type Bundle,
  type CompiledAuth,
  type CompiledWorkflow,
  isSignature,
  type JsonObject,
  type JsonSchema,
  type SignatureAuth,
} from "../bundle.ts";
import { SCHEMES } from "../triggers/webhook/schemes.ts";
import { componentName, embeddedSchema, problem, ref } from "./components.ts";

// Every problem an invoke can answer with, by status (docs/http-api.md; codes from src/common/problem.ts).
const INVOKE_PROBLEMS: Array<[string, string]> = [
  ["400", "`invalid_json` (the body is not a JSON object) or `invalid_idempotency_key`."],
  ["401", "`unauthorized`: missing or invalid credentials."],
  ["404", "`workflow_not_found`."],
  ["409", "`idempotency_conflict`: the Idempotency-Key was used with a different body."],
  ["413", "`payload_too_large`: the body is over 1 MiB."],
  ["415", "`unsupported_media_type`: the body is neither JSON nor a form."],
  ["422", "`invalid_params`: the body fails the workflow's params.schema; `errors` lists each violation."],
  ["500", "`server_misconfigured` (a secret is unset or too short) or `internal_error`."],
];

/** `support-triage` -> `invokeSupportTriage`. */
export function operationIdFor(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
  return `invoke${words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("")}`;
}

function securitySchemeFor(wf: CompiledWorkflow, auth: CompiledAuth): JsonObject {
  if (isSignature(auth)) {
    const [name, meaning] = signatureHeaders(auth)[0] ?? ["", ""];
    return {
      type: "apiKey",
      in: "header",
      name,
      description: `Signed delivery (scheme \`${auth.scheme}\`) for workflow ${wf.name}: ${meaning}, verified on the raw body.`,
    };
  }
  if (auth.scheme === "bearer" && auth.header === "authorization") {
    return { type: "http", scheme: "bearer", description: `Invoke credentials of workflow ${wf.name}.` };
  }
  return {
    type: "apiKey",
    in: "header",
    name: auth.header,
    description:
      auth.scheme === "bearer"
        ? `Invoke credentials of workflow ${wf.name}: the header value is \`Bearer <token>\`.`
        : `Invoke credentials of workflow ${wf.name}: the header value is the secret itself.`,
  };
}

/** The headers a signed delivery carries, signature first. */
function signatureHeaders(auth: SignatureAuth): Array<[string, string]> {
  if (auth.hmac) {
    const what = `${auth.hmac.prefix ? `\`${auth.hmac.prefix}\` + ` : ""}${auth.hmac.encoding} HMAC-${auth.hmac.algorithm.toUpperCase()} of the body`;
    return [[auth.hmac.header, what]];
  }
  return SCHEMES[auth.scheme].headers;
}

/** Header parameters of an invoke: the workflow's declared request headers, the sender's signature headers. */
function invokeHeaderParams(wf: CompiledWorkflow): JsonObject[] {
  const out: JsonObject[] = [];
  const seen = new Set<string>();
  const add = (name: string, description: string) => {
    if (seen.has(name.toLowerCase())) return;
    seen.add(name.toLowerCase());
    out.push({ name, in: "header", required: false, description, schema: { type: "string" } });
  };
  if (wf.auth && isSignature(wf.auth)) {
    // The first is the security scheme itself; the rest (timestamps, delivery ids) are parameters.
    for (const [name, meaning] of signatureHeaders(wf.auth).slice(1))
      add(name, `Sent by the sender: ${meaning}.`);
  }
  for (const h of wf.invoke.headers) {
    add(h.name, `Recorded with the run; expressions read it as \`request.headers.${h.key}\`.`);
  }
  return out;
}

export const PREFER_WAIT = {
  name: "Prefer",
  in: "header",
  required: false,
  description: "`wait=N` (RFC 7240): wait up to N seconds (max 60) for the run to finish.",
  schema: { type: "string", examples: ["wait=30"] },
};

/**
 * Adds `POST /invoke/<name>` of each of `names` to `paths`, its params schema to `schemas` and its
 * credentials to `securitySchemes` and (those that read runs) to `anyWorkflowSecurity`; true when
 * any of them is public.
 */
export function addInvokeOperations(
  bundle: Bundle,
  names: string[],
  paths: Record<string, JsonObject>,
  schemas: Record<string, JsonObject | JsonSchema>,
  securitySchemes: Record<string, JsonObject>,
  anyWorkflowSecurity: JsonObject[],
): boolean {
  let anyPublic = false;
  for (const name of names) {
    const key = bundle.invocable[name];
    const wf = key ? bundle.workflows[key] : undefined;
    if (!wf) continue;
    const paramsName = `${componentName(name)}.params`;
    schemas[paramsName] = embeddedSchema(name, wf.paramsSchema);
    let security: JsonObject[];
    if (wf.auth) {
      const scheme = `${componentName(name)}.auth`;
      securitySchemes[scheme] = securitySchemeFor(wf, wf.auth);
      security = [{ [scheme]: [] }];
      if (!isSignature(wf.auth)) {
        anyWorkflowSecurity.push({ [scheme]: [] });
      } else if (wf.auth.scheme !== "discord") {
        // Runs of a signed workflow are read with `Authorization: Bearer <one of its secrets>`.
        const reader = `${componentName(name)}.read`;
        securitySchemes[reader] = {
          type: "http",
          scheme: "bearer",
          description: `Reading runs of workflow ${name}: the token is one of its signing secrets.`,
        };
        anyWorkflowSecurity.push({ [reader]: [] });
      }
    } else {
      security = [{}];
      anyPublic = true;
    }
    const answer = wf.invoke.response;
    const responses: JsonObject = {
      ...(answer
        ? {
            [String(answer.status)]: {
              description: `The run completed within the wait (\`Prefer: wait=N\`, else ${answer.waitS} s): the workflow's \`invoke.response\`, rendered.`,
              headers: { Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" } },
              ...(answer.body.t === "lit" && answer.body.v === null
                ? {}
                : {
                    content: {
                      [answer.contentType]: {
                        schema: answer.contentType === "application/json" ? {} : { type: "string" },
                      },
                    },
                  }),
            },
          }
        : {
            "200": {
              description: "The run finished within the requested wait: its envelope.",
              headers: {
                Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" },
                "Preference-Applied": { schema: { type: "string" }, description: "`wait=N`" },
              },
              content: { "application/json": { schema: ref("Envelope") } },
            },
          }),
      "202": {
        description: "The run was created (or, with the same Idempotency-Key and body, already exists).",
        headers: { Location: { schema: { type: "string" }, description: "`/runs/{run_id}`" } },
        content: { "application/json": { schema: ref("RunAccepted") } },
      },
    };
    // With `Accept: text/event-stream`: the run's events as they happen (docs/http-api.md, "Streaming").
    const ok = responses["200"] as { content?: Record<string, unknown>; description?: string } | undefined;
    if (ok?.content) {
      ok.content["text/event-stream"] = { schema: { type: "string" } };
      ok.description = `${ok.description ?? ""} With \`Accept: text/event-stream\`: at once, the run's events as they happen (run.started or run.queued first, the steps' events, output.delta while a streaming agent step writes, run.completed with the envelope last).`;
    }
    for (const [status, text] of INVOKE_PROBLEMS) {
      if (status === "401" && !wf.auth) continue;
      responses[status] ??= problem(text);
    }
    if (wf.invoke.rateLimit) {
      responses["429"] = {
        ...problem("`rate_limited`: over the workflow's rate limit; no run was created."),
        headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait." } },
      };
    }
    if (answer) {
      responses["500"] = problem(
        "`run_failed` (the run failed or was canceled within the wait; `run_id` and `error` say how), `response_failed`, `server_misconfigured` or `internal_error`.",
      );
    }
    const description = [
      wf.description ?? "",
      wf.version ? `Version ${wf.version}.` : "",
      `Whole-run deadline ${wf.policy.timeoutS} s.`,
      wf.policy.costBudgetUsd !== null ? `Cost budget ${wf.policy.costBudgetUsd} USD per run.` : "",
      wf.auth ? "" : "Public: no credentials required.",
    ]
      .filter((s) => s !== "")
      .join(" ");
    paths[`/invoke/${name}`] = {
      post: {
        operationId: operationIdFor(name),
        summary: `Run workflow ${name}`,
        description,
        tags: ["workflows"],
        security,
        parameters: [
          PREFER_WAIT,
          {
            name: "wait",
            in: "query",
            required: false,
            description: "Same as `Prefer: wait=N`.",
            schema: { type: "integer", minimum: 0 },
          },
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            description:
              "Scoped to this workflow: the same key with an equal body answers with the same run; with a different body, 409.",
            schema: { type: "string", minLength: 1, maxLength: 255 },
          },
          {
            name: "traceparent",
            in: "header",
            required: false,
            description:
              "W3C Trace Context: a valid header puts the run in the caller's trace (its root span's parent is the header's span; the envelope's `trace_id` is the header's); an invalid one is ignored (a new trace), never an error.",
            schema: { type: "string" },
          },
          ...invokeHeaderParams(wf),
        ],
        requestBody: {
          required: false,
          description:
            "The workflow's params (an empty body is `{}`); at most 1 MiB. A form becomes an object of strings (a repeated field: an array); a form whose only field is `payload` holding a JSON object is that object.",
          content: {
            "application/json": { schema: ref(paramsName) },
            "application/x-www-form-urlencoded": { schema: { type: "object" } },
          },
        },
        responses,
      },
    };
  }
  return anyPublic;
}
