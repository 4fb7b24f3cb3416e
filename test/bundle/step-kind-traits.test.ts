/**
 * The bundle's tables against the JSON Schemas an editor and the API publish: the step kinds'
 * traits (src/bundle/steps.ts), the signature schemes and the provider types. For step kinds: a kind the compiler knows is a step field of the workflow schema and a node kind of the
 * API's graph, and the fields that depend on a trait (`for_each`, `retry`) apply to exactly the
 * kinds that have it. A new kind that forgets one of these lists fails here, not in a user's editor.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  kindsWhere,
  PROVIDER_TYPES,
  SIGNATURE_SCHEMES,
  STEP_KIND_TRAITS,
  STEP_KINDS,
} from "../../src/bundle.ts";

type Obj = Record<string, unknown>;
const read = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../schema/${name}`, import.meta.url), "utf8")) as Obj;

const workflowSchema = read("workflow.schema.json");
const stepProps = (((workflowSchema.$defs as Obj).step as Obj).properties ?? {}) as Record<string, Obj>;
const appliesTo = (field: string) => stepProps[field]?.["x-applies-to"] as string[] | undefined;

describe("step kind traits", () => {
  it("give every kind the compiler knows every trait", () => {
    expect(STEP_KINDS).toEqual(expect.arrayContaining(["agent", "workflow", "transform", "webhook", "wait"]));
    for (const k of STEP_KINDS)
      expect(Object.keys(STEP_KIND_TRAITS[k]).sort(), k).toEqual(
        ["compensates", "effect", "fansOut", "mock", "output", "retries", "waits"].sort(),
      );
  });

  it("give each kind its own step field in the workflow schema (the editor offers it)", () => {
    for (const k of STEP_KINDS) expect(appliesTo(k), k).toEqual([k]);
  });

  it("apply for_each to exactly the kinds that fan out, and retry to exactly the kinds that retry", () => {
    expect([...(appliesTo("for_each") ?? [])].sort()).toEqual(kindsWhere("fansOut").sort());
    expect([...(appliesTo("retry") ?? [])].sort()).toEqual(kindsWhere("retries").sort());
  });

  it("apply compensate to exactly the kinds that act outside the run", () => {
    expect([...(appliesTo("compensate") ?? [])].sort()).toEqual(kindsWhere("compensates").sort());
    expect(kindsWhere("compensates").sort()).toEqual(["agent", "webhook", "workflow"]);
  });

  it("are the node kinds of the API's run graph", () => {
    const api = read("api.schema.json");
    const text = JSON.stringify(api);
    const enums = [...text.matchAll(/"kind":\{"enum":(\[[^\]]*\])/g)].map((m) => JSON.parse(m[1] as string));
    expect(enums).toContainEqual(STEP_KINDS);
  });
});

describe("the bundle's other tables", () => {
  it("are the signature schemes the workflow schema offers for invoke.auth", () => {
    const text = JSON.stringify(workflowSchema);
    expect(text).toContain(JSON.stringify(["raw", "bearer", ...SIGNATURE_SCHEMES]));
  });

  it("are the provider types the gateway schema offers (its file format lives in workflow.schema.json)", () => {
    const text = JSON.stringify(workflowSchema);
    expect(text).toContain(`"enum":${JSON.stringify(Object.keys(PROVIDER_TYPES))}`);
  });
});
