/**
 * The step kinds' traits (src/bundle/steps.ts) against the JSON Schemas an editor and the API
 * publish: a kind the compiler knows is a step field of the workflow schema and a node kind of the
 * API's graph, and the fields that depend on a trait (`for_each`, `retry`) apply to exactly the
 * kinds that have it. A new kind that forgets one of these lists fails here, not in a user's editor.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { kindsWhere, STEP_KIND_TRAITS, STEP_KINDS } from "../../src/bundle.ts";

type Obj = Record<string, unknown>;
const read = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../schema/${name}`, import.meta.url), "utf8")) as Obj;

const workflowSchema = read("workflow.schema.json");
const stepProps = (((workflowSchema.$defs as Obj).step as Obj).properties ?? {}) as Record<string, Obj>;
const appliesTo = (field: string) => stepProps[field]?.["x-applies-to"] as string[] | undefined;

describe("step kind traits", () => {
  it("name every kind the compiler knows, with every trait", () => {
    expect(STEP_KINDS).toEqual(["agent", "workflow", "transform", "webhook", "wait"]);
    for (const k of STEP_KINDS)
      expect(Object.keys(STEP_KIND_TRAITS[k]).sort()).toEqual(
        ["effect", "fansOut", "mock", "output", "retries", "waits"].sort(),
      );
  });

  it("give each kind its own step field in the workflow schema (the editor offers it)", () => {
    for (const k of STEP_KINDS) expect(appliesTo(k), k).toEqual([k]);
  });

  it("apply for_each to exactly the kinds that fan out, and retry to exactly the kinds that retry", () => {
    expect([...(appliesTo("for_each") ?? [])].sort()).toEqual(kindsWhere("fansOut").sort());
    expect([...(appliesTo("retry") ?? [])].sort()).toEqual(kindsWhere("retries").sort());
  });

  it("are the node kinds of the API's run graph", () => {
    const api = read("api.schema.json");
    const text = JSON.stringify(api);
    const enums = [...text.matchAll(/"kind":\{"enum":(\[[^\]]*\])/g)].map((m) => JSON.parse(m[1] as string));
    expect(enums).toContainEqual(STEP_KINDS);
  });
});
