/** Which secrets a run masks, and the configuration errors a bad secret value causes. */
import { describe, expect, it } from "vitest";
import type { CompiledStep } from "../../../src/bundle.ts";
import { collectSecrets } from "../../../src/engine/secrets.ts";
import { testBundle, testWorkflow } from "../../support/compiled.ts";
import { invoke } from "../harness.ts";

describe("secret values", () => {
  it("refuses to create a run when a declared secret is shorter than 8 characters", async () => {
    const res = await invoke("short-secret", {});
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: "server_misconfigured" });
    expect(text).toContain("SHORT_SECRET");
    expect(text).not.toContain("short1");
    expect(res.headers.get("location")).toBeNull();
  });

  it("masks the gateway's provider keys only in runs that can call a model", () => {
    const agentStep = {
      id: "ask",
      kind: "agent",
      deps: [],
      ancestors: [],
      condition: null,
    } as unknown as CompiledStep;
    const child = testWorkflow({ key: "child.yaml", name: "child", steps: [agentStep] });
    const subStep = {
      id: "sub",
      kind: "workflow",
      workflow: "child.yaml",
      deps: [],
      ancestors: [],
      condition: null,
    } as unknown as CompiledStep;
    const withAgent = testWorkflow({ key: "a.yaml", name: "a", steps: [subStep] });
    const plain = testWorkflow({ key: "p.yaml", name: "p", env: [{ name: "OWN", secret: true }] });
    const bundle = testBundle([child, withAgent, plain], {
      gateway: { env: [{ name: "PROVIDER_KEY", secret: true }], providers: [], groups: [] },
    });
    const env = { OWN: "own-secret-value", PROVIDER_KEY: "short" };
    expect(collectSecrets(bundle, withAgent, env).tooShort).toEqual(["PROVIDER_KEY"]);
    expect(collectSecrets(bundle, plain, env)).toEqual({ values: ["own-secret-value"], tooShort: [] });
  });
});
