/**
 * Agent output contracts (docs/agents-and-tools.md): the reserved `ktsu_` fields of a validated output, in their
 * order, `confidence_threshold` with one reflect call, a human review through the approval
 * machinery, a skip, and the annotations kept on the step record.
 */
import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runStub } from "../../reliability/run-helpers.ts";
import { type Envelope, run, uniqueKey } from "../harness.ts";
import { approvals, decide, finished, modelCalls, script, start, until } from "../tools-support.ts";

function reply(value: Record<string, unknown>, tag = uniqueKey("c")): string {
  return script([{ reply: value }], tag);
}

describe("reserved fields", () => {
  it("keeps flags, rationale and confidence as annotations and removes every ktsu_ key from the output", async () => {
    const e = await run("tools-contract", {
      script: reply({
        answer: "yes",
        ktsu_confidence: 0.9,
        ktsu_flags: ["pii_detected"],
        ktsu_rationale: "it says so",
        ktsu_low_quality: false,
      }),
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ answer: "yes" });
    expect(e.steps[0].annotations).toEqual({
      flags: ["pii_detected"],
      rationale: "it says so",
      confidence: 0.9,
    });
    expect(e.steps[1].output).toEqual({ result: { answer: "yes" } });
    // An output schema with additionalProperties: false still accepts reserved keys it does not declare.
    expect(e.steps[0].metrics.llm_calls).toBe(1);
  });

  it("fails the run at once on ktsu_injection_attempt, before any other rule", async () => {
    const e = await run("tools-contract", {
      script: reply({
        answer: "x",
        ktsu_injection_attempt: true,
        ktsu_low_quality: true,
        ktsu_confidence: 0,
      }),
    });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "injection_detected", step: "judge" });
    expect(e.steps[1]).toMatchObject({ status: "skipped", output: { skipped: true, reason: "run_failed" } });
    expect(e.steps[0].metrics.llm_calls).toBe(1);
  });

  it("fails the step on ktsu_untrusted_content, then on ktsu_low_quality", async () => {
    const untrusted = await run("tools-contract", {
      script: reply({
        answer: "x",
        ktsu_untrusted_content: true,
        ktsu_low_quality: true,
        ktsu_confidence: 1,
      }),
    });
    expect(untrusted.error.code).toBe("untrusted_content");
    const low = await run("tools-contract", {
      script: reply({ answer: "x", ktsu_low_quality: true, ktsu_confidence: 1 }),
    });
    expect(low.error.code).toBe("low_quality");
  });

  it("fails output_schema_mismatch when a reserved flag is not a boolean", async () => {
    const e = await run("tools-contract", {
      script: reply({ answer: "x", ktsu_needs_human: "yes", ktsu_confidence: 1 }),
    });
    expect(e.error.code).toBe("output_schema_mismatch");
    expect(e.error.message).toContain("ktsu_needs_human");
  });

  it("skips the step on a non-empty ktsu_skip_reason; its dependents still run", async () => {
    const e = await run("tools-contract", {
      script: reply({
        answer: "x",
        ktsu_confidence: 1,
        ktsu_skip_reason: "nothing to do",
        ktsu_flags: ["idle"],
      }),
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0]).toMatchObject({
      status: "skipped",
      output: { skipped: true, reason: "nothing to do" },
    });
    expect(e.steps[0].annotations).toEqual({ flags: ["idle"], rationale: null, confidence: 1 });
    expect(e.steps[1]).toMatchObject({
      status: "complete",
      output: { result: { skipped: true, reason: "nothing to do" } },
    });
  });
});

describe("confidence_threshold and reflect", () => {
  it("makes no reflect call at or above the threshold", async () => {
    const tag = uniqueKey("above");
    const e = await run("tools-contract", {
      script: reply({ answer: "sure", ktsu_confidence: 0.7 }, tag),
      reflect: JSON.stringify({ answer: "reflected", ktsu_confidence: 1 }),
    });
    expect(e.steps[0].output).toEqual({ answer: "sure" });
    expect(await modelCalls(tag)).toHaveLength(1);
  });

  it("below it, reflects once with the reflect prompt, the request and the draft; the reflection replaces the draft", async () => {
    const tag = uniqueKey("below");
    const e = await run("tools-contract", {
      script: reply({ answer: "draft", ktsu_confidence: 0.3, ktsu_flags: ["draft"] }, tag),
      reflect: JSON.stringify({ answer: "better", ktsu_confidence: 0.95, ktsu_rationale: "checked twice" }),
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ answer: "better" });
    expect(e.steps[0].annotations).toEqual({ flags: [], rationale: "checked twice", confidence: 0.95 });
    expect(e.steps[0].metrics.llm_calls).toBe(2);
    const calls = await modelCalls(tag);
    expect(calls).toHaveLength(2);
    const reflect = JSON.stringify(calls[1]?.body.messages);
    expect(reflect).toContain("Check your draft again.");
    expect(reflect).toContain(tag);
    expect(reflect).toContain('\\"answer\\":\\"draft\\"');
    expect(calls[1]?.body.tools).toBeUndefined();
  });

  it("fails low_confidence when the reflection is still below, after exactly one reflect call", async () => {
    const tag = uniqueKey("still");
    const e = await run("tools-contract", {
      script: reply({ answer: "draft", ktsu_confidence: 0.3 }, tag),
      reflect: JSON.stringify({ answer: "meh", ktsu_confidence: 0.5 }),
    });
    expect(e.error.code).toBe("low_confidence");
    expect(e.error.message).toContain("after one reflect call");
    expect(await modelCalls(tag)).toHaveLength(2);
  });

  it("without prompt.reflect, fails low_confidence at once; a missing confidence counts as 0", async () => {
    const tag = uniqueKey("plain");
    const low = await run("tools-contract-plain", {
      script: reply({ answer: "x", ktsu_confidence: 0.2 }, tag),
    });
    expect(low.error.code).toBe("low_confidence");
    expect(await modelCalls(tag)).toHaveLength(1);
    const missing = await run("tools-contract-plain", { script: reply({ answer: "x" }) });
    expect(missing.error.code).toBe("low_confidence");
    expect(missing.error.message).toContain("missing");
  });
});

describe("ktsu_needs_human", () => {
  async function review(
    decision: "approved" | "rejected",
  ): Promise<{ e: Envelope; approval: Record<string, unknown> }> {
    const runId = await start("tools-contract", {
      script: reply({ answer: "ship it", ktsu_confidence: 0.9, ktsu_needs_human: true }),
    });
    await until(runId, (e) => e.steps[0]?.status === "pending_approval");
    const list = await approvals(runId, {});
    const approval = list.body.approvals[0] as Record<string, unknown> & { id: string };
    expect((await decide(runId, approval.id, { decision }, {})).status).toBe(200);
    return { e: await until(runId, finished), approval };
  }

  it("waits for a human; approved, the step completes with the output", async () => {
    const { e, approval } = await review("approved");
    expect(approval).toMatchObject({
      kind: "needs_human",
      server: null,
      tool: null,
      step: "judge",
      arguments: { answer: "ship it" },
    });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output).toEqual({ answer: "ship it" });
  });

  it("rejected, the step fails human_rejected", async () => {
    const { e } = await review("rejected");
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "human_rejected", step: "judge" });
  });

  it("keeps the output under review across an eviction: no new model call, the same output completes", async () => {
    const tag = uniqueKey("review-evict");
    const runId = await start("tools-contract", {
      script: reply({ answer: "reviewed once", ktsu_confidence: 0.9, ktsu_needs_human: true }, tag),
    });
    await until(runId, (e) => e.steps[0]?.status === "pending_approval");
    await evictDurableObject(runStub(runId));
    await until(runId, (e) => e.steps[0]?.status === "pending_approval");
    const list = await approvals(runId, {});
    expect(list.body.approvals).toHaveLength(1);
    const id = (list.body.approvals[0] as { id: string }).id;
    expect((await decide(runId, id, { decision: "approved" }, {})).status).toBe(200);
    const e = await until(runId, finished);
    expect(e.steps[0].output).toEqual({ answer: "reviewed once" });
    expect(await modelCalls(tag)).toHaveLength(1);
  });
});
