/**
 * What the OpenAPI document says about triggers (docs/triggers.md): a sender's signature as the
 * security scheme and its other headers as parameters, declared request headers, the form
 * content type, the rendered invoke.response, 429 with Retry-After for a rate limit, and who
 * reads runs (a signing secret as bearer, the ADMIN_TOKEN).
 */
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { beforeAll, describe, expect, it } from "vitest";
import { compileProject } from "../../src/compiler/index.ts";
import { buildOpenApi } from "../../src/openapi/build.ts";

// biome-ignore lint/suspicious/noExplicitAny: the document is inspected field by field
type Doc = any;
let doc: Doc;

beforeAll(() => {
  const result = compileProject(fileURLToPath(new URL("../fixtures/workflows", import.meta.url)));
  if (!result.bundle) throw new Error(result.diagnostics.map((d) => d.text).join("\n"));
  doc = buildOpenApi(result.bundle);
});

const op = (name: string) => doc.paths[`/invoke/${name}`].post;
const headerParams = (name: string) =>
  (op(name).parameters as Array<{ name: string; in: string }>)
    .filter((p) => p.in === "header")
    .map((p) => p.name);

describe("OpenAPI of triggers", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("documents a signature scheme as the header it arrives in, the sender's other headers as parameters", () => {
    const [scheme] = Object.keys(op("trig-github").security[0]);
    expect(doc.components.securitySchemes[scheme as string]).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "X-Hub-Signature-256",
    });
    expect(headerParams("trig-github")).toContain("X-GitHub-Delivery");
    expect(headerParams("trig-slack")).toContain("X-Slack-Request-Timestamp");
    const [hmac] = Object.keys(op("trig-hmac").security[0]);
    expect(doc.components.securitySchemes[hmac as string]).toMatchObject({ name: "x-acme-signature" });
  });

  it("lists declared request headers as header parameters", () => {
    expect(headerParams("trig-headers")).toEqual(
      expect.arrayContaining(["x-github-event", "x-request-source", "Prefer", "Idempotency-Key"]),
    );
  });

  it("accepts JSON and forms as request bodies", () => {
    expect(Object.keys(op("trig-form").requestBody.content)).toEqual([
      "application/json",
      "application/x-www-form-urlencoded",
    ]);
    expect(op("trig-form").responses["415"]).toBeDefined();
  });

  it("documents invoke.response instead of the envelope, and run_failed", () => {
    const responses = op("trig-response").responses;
    expect(responses["200"]).toBeUndefined();
    expect(responses["201"].content["application/json"]).toBeDefined();
    expect(responses["500"].description).toMatch(/run_failed/);
    expect(op("trig-response-text").responses["200"].content["text/plain"].schema).toEqual({
      type: "string",
    });
    expect(op("basic").responses["200"].content["application/json"].schema.$ref).toBe(
      "#/components/schemas/Envelope",
    );
  });

  it("documents 429 with Retry-After only for rate limited workflows", () => {
    expect(op("trig-rate-limit").responses["429"].headers["Retry-After"]).toBeDefined();
    expect(op("basic").responses["429"]).toBeUndefined();
  });

  it("lets run routes be read with a signing secret or the ADMIN_TOKEN", () => {
    const security = doc.paths["/runs/{run_id}"].get.security as Array<Record<string, unknown>>;
    const names = security.flatMap((s) => Object.keys(s));
    expect(names).toContain("admin");
    expect(names).toContain("trig-github.read");
    expect(names).not.toContain("trig-discord.read");
    expect(doc.components.securitySchemes["trig-github.read"]).toMatchObject({
      type: "http",
      scheme: "bearer",
    });
  });

  it("shows the recorded request in the envelope", () => {
    expect(doc.components.schemas.Envelope.required).toContain("request");
  });
});

describe("OpenAPI of the protocols", () => {
  it("describes the chat endpoint with the models it serves and their credentials", () => {
    const chat = doc.paths["/v1/chat/completions"].post;
    const models = chat.requestBody.content["application/json"].schema.properties.model.enum as string[];
    expect(models).toEqual(expect.arrayContaining(["chat-transform", "chat-public", "chat-stream"]));
    expect(models).not.toContain("basic");
    // chat-transform's bearer token, or nothing for the public ones.
    expect(chat.security).toEqual(expect.arrayContaining([{ "chat-transform.auth": [] }, {}]));
    expect(chat.responses["500"].description).toContain("x-should-retry: false");
    expect(doc.paths["/v1/models"].get.security).toEqual([{}]);
  });

  it("describes each A2A agent's card and endpoint, with the version header", () => {
    const card = doc.paths["/a2a/{name}/.well-known/agent-card.json"].get;
    expect(card.parameters[0].schema.enum).toEqual(expect.arrayContaining(["a2a-ten", "a2a-signal"]));
    expect(card.security).toEqual([{}]);
    const endpoint = doc.paths["/a2a/{name}"].post;
    expect(endpoint.parameters[1]).toMatchObject({ name: "A2A-Version", in: "header", required: true });
    expect(endpoint.security).toEqual(expect.arrayContaining([{ "a2a-ten.auth": [] }, {}]));
  });

  it("describes the MCP server with the tools it serves", () => {
    const mcp = doc.paths["/mcp"].post;
    expect(mcp.description).toContain("mcp-approve");
    expect(mcp.description).not.toContain("chat-stream");
    expect(Object.keys(mcp.responses)).toEqual(expect.arrayContaining(["200", "202", "401"]));
    expect(mcp.responses["405"]).toBeDefined();
  });
});
