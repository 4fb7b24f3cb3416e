/**
 * Scores and arms, pure (src/engine/scores.ts, src/engine/stats.ts): what counts as a score, which
 * runs a judge samples, which arm a key gets, and whether two arms really differ.
 */
import { describe, expect, it } from "vitest";
import type { CompiledVariants } from "../../src/bundle.ts";
import { chooseArm, exprScores, sampled, scoreValue } from "../../src/engine/scores.ts";
import { summary, tQuantile, welch } from "../../src/engine/stats.ts";

describe("a score", () => {
  it("is a boolean (1 or 0) or a number from 0 to 1; anything else is an error on it", () => {
    expect(scoreValue(true)).toEqual({ value: 1, error: null });
    expect(scoreValue(false)).toEqual({ value: 0, error: null });
    expect(scoreValue(0.25)).toEqual({ value: 0.25, error: null });
    expect(scoreValue(1.5)).toEqual({ value: null, error: "score 1.5 is outside 0..1" });
    expect(scoreValue("high").error).toMatch(/not string$/);
    expect(scoreValue(null).error).toMatch(/not null$/);
  });

  it("is computed from the step's output, the params and the steps before it, and an expression that fails is an error", () => {
    const scores = exprScores(
      [
        { name: "cites", expr: "contains(output.text, params.id)", sample: 1 },
        { name: "long", expr: "length(output.text) > `3`", sample: 1 },
        { name: "broken", expr: "length(`1`)", sample: 1 },
        { name: "judged", judge: { agent: "j", params: { t: "lit", v: {} } }, sample: 1 },
      ],
      { output: { text: "order A-1" }, params: { id: "A-1" }, step: {} },
      "2026-11-29T00:00:00.000Z",
    );
    expect(scores.map((s) => [s.name, s.value])).toEqual([
      ["cites", 1],
      ["long", 1],
      ["broken", null],
    ]);
    expect(scores[2]?.error).toBeTruthy();
  });
});

describe("a judge's sample", () => {
  it("takes every run at 1, none at 0, and about the fraction asked, the same runs every time", () => {
    const ids = Array.from({ length: 2000 }, (_, i) => `run-${i}`);
    expect(ids.every((id) => sampled(1, id, "s", "h"))).toBe(true);
    expect(ids.some((id) => sampled(0, id, "s", "h"))).toBe(false);
    const taken = ids.filter((id) => sampled(0.2, id, "s", "h"));
    expect(taken.length).toBeGreaterThan(320);
    expect(taken.length).toBeLessThan(480);
    expect(ids.filter((id) => sampled(0.2, id, "s", "h"))).toEqual(taken);
  });
});

describe("an arm", () => {
  const variants: CompiledVariants = {
    key: null,
    arms: [
      { name: "control", weight: 90, agent: null, group: null, maxTokens: null },
      { name: "premium", weight: 10, agent: null, group: "premium", maxTokens: null },
      { name: "off", weight: 0, agent: "x", group: null, maxTokens: null },
    ],
  };

  it("is chosen by weight over many keys, never an arm of weight 0, the same for the same key and step", () => {
    const keys = Array.from({ length: 2000 }, (_, i) => `customer-${i}`);
    const arms = keys.map((k) => chooseArm(variants, k, "answer").name);
    const premium = arms.filter((a) => a === "premium").length;
    expect(premium).toBeGreaterThan(140);
    expect(premium).toBeLessThan(260);
    expect(arms).not.toContain("off");
    expect(keys.map((k) => chooseArm(variants, k, "answer").name)).toEqual(arms);
    // Another step of the same key draws again.
    expect(keys.map((k) => chooseArm(variants, k, "other").name)).not.toEqual(arms);
  });
});

describe("the statistics of scores", () => {
  it("summarises a sample with its percentiles", () => {
    expect(summary([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])).toEqual({
      count: 10,
      mean: 5.5,
      p10: 1.9,
      p50: 5.5,
      p90: 9.1,
    });
    expect(summary([])).toEqual({ count: 0, mean: 0, p10: 0, p50: 0, p90: 0 });
  });

  it("reads Student's t quantiles as the tables print them", () => {
    expect(tQuantile(0.975, 1)).toBeCloseTo(12.7062, 3);
    expect(tQuantile(0.975, 10)).toBeCloseTo(2.2281, 3);
    expect(tQuantile(0.975, 30)).toBeCloseTo(2.0423, 3);
  });

  it("finds a real difference significant, and an overlapping one not", () => {
    const better = welch([0.8, 0.9, 0.85, 0.95, 0.9], [0.5, 0.6, 0.55, 0.65, 0.6]);
    expect(better.diff).toBeCloseTo(0.3, 10);
    expect(better.ci95[0]).toBeCloseTo(0.2169, 3);
    expect(better.ci95[1]).toBeCloseTo(0.3831, 3);
    expect(better.significant).toBe(true);
    const noise = welch([0.5, 0.9, 0.2, 0.7], [0.6, 0.4, 0.8, 0.3]);
    expect(noise.ci95[0]).toBeLessThan(0);
    expect(noise.ci95[1]).toBeGreaterThan(0);
    expect(noise.significant).toBe(false);
  });

  it("calls a difference of two constant arms significant exactly when their means differ", () => {
    expect(welch([1, 1, 1], [0, 0, 0])).toEqual({ diff: 1, ci95: [1, 1], significant: true });
    expect(welch([1, 1], [1, 1]).significant).toBe(false);
  });
});
