/**
 * The OpenAPI document the build and the Worker derive from a bundle: checked with a standard
 * OpenAPI 3.1 validator and against what API clients generated from it rely on (one operation
 * per workflow, its params as the body schema, its credentials as the security scheme).
 */
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { beforeAll, describe, expect, it } from "vitest";
import type { Bundle, CompiledWorkflow } from "../../src/bundle.ts";
import { compileProject } from "../../src/compiler/index.ts";
import { buildOpenApi } from "../../src/openapi/build.ts";
import { operationIdFor } from "../../src/openapi/invoke-operations.ts";

// biome-ignore lint/suspicious/noExplicitAny: the document is inspected field by field
type Doc = any;

let bundle: Bundle;
let doc: Doc;

beforeAll(() => {
  const result = compileProject(fileURLToPath(new URL("../fixtures/workflows", import.meta.url)));
  if (!result.bundle) throw new Error(result.diagnostics.map((d) => d.text).join("\n"));
  bundle = result.bundle;
  doc = buildOpenApi(bundle);
});

function workflow(name: string): CompiledWorkflow {
  const wf = bundle.workflows[bundle.invocable[name] ?? ""];
  if (!wf) throw new Error(`fixture ${name} missing`);
  return wf;
}

/** The security scheme an operation's first (only) requirement names. */
function securitySchemeOf(op: Doc): Doc {
  const [name] = Object.keys(op.security[0]);
  return doc.components.securitySchemes[name ?? ""];
}

function schemaOf(ref: { $ref: string }): unknown {
  const name = ref.$ref.replace("#/components/schemas/", "");
  return doc.components.schemas[name];
}

describe("OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("has one POST operation per invocable workflow, at its concrete path", () => {
    const invokePaths = Object.keys(doc.paths).filter((p) => p.startsWith("/invoke/"));
    expect(invokePaths.sort()).toEqual(
      Object.keys(bundle.invocable)
        .map((n) => `/invoke/${n}`)
        .sort(),
    );
    for (const p of invokePaths) expect(Object.keys(doc.paths[p])).toEqual(["post"]);
  });

  it("gives every operation a unique operationId derived from the workflow name", () => {
    expect(doc.paths["/invoke/parallel-webhooks"].post.operationId).toBe("invokeParallelWebhooks");
    const ids = Object.values(doc.paths).flatMap((item) =>
      Object.values(item as Record<string, { operationId: string }>).map((op) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("uses the workflow's params.schema as the request body schema", () => {
    const body = doc.paths["/invoke/basic"].post.requestBody;
    expect(schemaOf(body.content["application/json"].schema)).toEqual(workflow("basic").paramsSchema);
  });

  it("documents the Prefer, Idempotency-Key and traceparent headers on invoke", () => {
    const params = doc.paths["/invoke/basic"].post.parameters;
    const headers = params.filter((p: Doc) => p.in === "header").map((p: Doc) => p.name);
    expect(headers).toEqual(["Prefer", "Idempotency-Key", "traceparent"]);
  });

  it("declares 202, 200 and problem+json errors for invoke, sharing one Problem schema", () => {
    const responses = doc.paths["/invoke/auth-bearer"].post.responses;
    expect(Object.keys(responses).sort()).toEqual(
      ["200", "202", "400", "401", "404", "405", "409", "413", "415", "422", "500"].sort(),
    );
    for (const status of ["400", "401", "404", "405", "409", "413", "415", "422", "500"]) {
      expect(responses[status].content["application/problem+json"].schema).toEqual({
        $ref: "#/components/schemas/Problem",
      });
    }
    expect(responses["200"].content["application/json"].schema.$ref).toBe("#/components/schemas/Envelope");
  });

  it("describes a bearer workflow with an http bearer scheme", () => {
    const op = doc.paths["/invoke/auth-bearer"].post;
    expect(op.security).toHaveLength(1);
    const scheme = securitySchemeOf(op);
    expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("describes a raw-secret workflow with an apiKey in its header", () => {
    const scheme = securitySchemeOf(doc.paths["/invoke/auth-raw"].post);
    expect(scheme).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
  });

  it("marks a public workflow as needing no credentials and never answering 401", () => {
    const op = doc.paths["/invoke/basic"].post;
    expect(op.security).toEqual([{}]);
    expect(op.responses["401"]).toBeUndefined();
  });

  it("includes the run API and health routes", () => {
    expect(Object.keys(doc.paths["/runs/{run_id}"]).sort()).toEqual(["delete", "get"]);
    expect(doc.paths["/runs/{run_id}/envelope"].get).toBeDefined();
    expect(
      doc.paths["/runs/{run_id}/events"].get.responses["200"].content["text/event-stream"],
    ).toBeDefined();
    expect(doc.paths["/runs/{run_id}/cancel"].post.responses["409"]).toBeDefined();
    expect(doc.paths["/runs"].get.parameters[0]).toMatchObject({ name: "workflow", required: true });
    expect(doc.paths["/health"].get).toBeDefined();
  });

  it("requires every envelope key of docs/http-api.md", () => {
    expect(doc.components.schemas.Envelope.required.sort()).toEqual(
      [
        "run_id",
        "rerun_of",
        "workflow",
        "workflow_version",
        "status",
        "error",
        "params",
        "steps",
        "request",
        "output",
        "totals",
        "scores",
        "budget_usd",
        "coalesced",
        "queue",
        "deliveries",
        "compensation",
        "trace_id",
        "deadline",
        "created_at",
        "finished_at",
      ].sort(),
    );
    expect(doc.components.schemas.StepRecord.properties.steps.items.$ref).toBe(
      "#/components/schemas/StepRecord",
    );
  });

  it("keeps a params schema's own $ref working once it is moved into components", async () => {
    const wf = workflow("basic");
    const withRefs: Bundle = {
      ...bundle,
      invocable: { refs: "refs.workflow.yaml" },
      workflows: {
        "refs.workflow.yaml": {
          ...wf,
          key: "refs.workflow.yaml",
          name: "refs",
          paramsSchema: {
            type: "object",
            properties: { who: { $ref: "#/$defs/person" } },
            $defs: { person: { type: "string" } },
          },
        },
      },
    };
    const d: Doc = buildOpenApi(withRefs);
    expect(d.components.schemas["refs.params"].$id).toMatch(/^urn:/);
    expect((await new Validator().validate(d)).valid).toBe(true);
  });

  it("derives camel-case operation ids from hyphenated names", () => {
    expect(operationIdFor("support-triage")).toBe("invokeSupportTriage");
  });
});

describe("405 method_not_allowed", () => {
  it("is documented on every operation, as problem+json with the Allow header", () => {
    const missing: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Doc>>)) {
      for (const [method, op] of Object.entries(item)) {
        if (!["get", "post", "delete", "put", "patch"].includes(method)) continue;
        const r = op.responses["405"];
        if (!r?.headers?.Allow || !r.content?.["application/problem+json"]) missing.push(`${method} ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
