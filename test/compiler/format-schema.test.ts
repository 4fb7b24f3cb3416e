/**
 * schema/workflow.schema.json is what editors validate against (yaml-language-server) and what
 * the build's structure check reads. These tests check it the way an editor would: with a
 * standard JSON Schema validator, the examples pass and a typo fails.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Schema, Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const root = fileURLToPath(new URL("../..", import.meta.url));
const schema = JSON.parse(readFileSync(`${root}schema/workflow.schema.json`, "utf8")) as Record<
  string,
  unknown
>;
const meta = JSON.parse(readFileSync(`${root}schema/json-schema-2020-12.meta.json`, "utf8")) as Schema;
const editor = (def: string) =>
  new Validator({ ...schema, $ref: `#/$defs/${def}` } as Schema, "2020-12", false);
const yamlOf = (path: string) => parse(readFileSync(`${root}${path}`, "utf8"));

describe("the format schema", () => {
  it("is itself a valid draft 2020-12 JSON Schema", () => {
    expect(new Validator(meta, "2020-12", false).validate(schema).errors).toEqual([]);
  });

  it("accepts every example workflow as an editor would", () => {
    const files = readdirSync(`${root}workflows`).filter((f) => f.endsWith(".workflow.yaml"));
    for (const f of [...files.map((x) => `workflows/${x}`), "workflows/sub/escalate.workflow.yaml"]) {
      expect(editor("workflowFile").validate(yamlOf(f)).valid, f).toBe(true);
    }
  });

  it("accepts the example agent and gateway files", () => {
    expect(editor("agentFile").validate(yamlOf("workflows/agents/triage.agent.yaml")).valid).toBe(true);
    expect(editor("gatewayFile").validate(yamlOf("workflows/gateway.yaml")).valid).toBe(true);
  });

  it("flags a misspelled step field in the editor too", () => {
    const wf = yamlOf("workflows/hello.workflow.yaml");
    wf.pipeline[1].dependson = ["greet"];
    expect(editor("workflowFile").validate(wf).valid).toBe(false);
  });
});
