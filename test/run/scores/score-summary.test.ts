/**
 * A workflow's score report (src/run/scores/score-summary.ts) from its listed runs: per step, scorer,
 * version and arm; each arm against its step's first; the daily means the chart draws.
 */
import { describe, expect, it } from "vitest";
import type { AgentStep } from "../../../src/bundle.ts";
import { report, type ScoredRun } from "../../../src/run/scores/score-summary.ts";
import { scoreChartSvg } from "../../../src/viewer/score-chart.ts";
import { testWorkflow } from "../../support/compiled.ts";

const step = {
  id: "answer",
  kind: "agent",
  variants: {
    key: null,
    arms: [
      { name: "control", weight: 1, agent: null, group: null, maxTokens: null },
      { name: "premium", weight: 1, agent: null, group: "p", maxTokens: null },
    ],
  },
} as unknown as AgentStep;
const wf = testWorkflow({ name: "w", steps: [step] });

function listed(day: number, arm: string, value: number, version = "1.0.0"): ScoredRun & { run_id: string } {
  return {
    run_id: `${arm}-${day}-${value}`,
    created_at: new Date(Date.UTC(2026, 10, day, 12)).toISOString(),
    scores: { v: version, s: [["answer", "helpful", value, arm]] },
  };
}

describe("a score report", () => {
  const runs = [
    ...[0.6, 0.5, 0.55, 0.65].map((v, i) => listed(27 + (i % 2), "control", v)),
    ...[0.9, 0.85, 0.95, 0.9].map((v, i) => listed(27 + (i % 2), "premium", v)),
    listed(28, "control", 0.2, "0.9.0"),
  ];
  const r = report(wf, Date.UTC(2026, 10, 27), Date.UTC(2026, 10, 29), runs);

  it("sums each step, scorer, version and arm up", () => {
    expect(r.runs).toBe(9);
    expect(r.scores).toEqual([
      {
        step: "answer",
        scorer: "helpful",
        version: "0.9.0",
        arm: "control",
        count: 1,
        mean: 0.2,
        p10: 0.2,
        p50: 0.2,
        p90: 0.2,
      },
      expect.objectContaining({ version: "1.0.0", arm: "control", count: 4, mean: 0.575 }),
      expect.objectContaining({ version: "1.0.0", arm: "premium", count: 4 }),
    ]);
    expect(r.scores[2]?.mean).toBeCloseTo(0.9, 10);
  });

  it("compares each arm with its step's first, over every version", () => {
    expect(r.comparisons).toHaveLength(1);
    const c = r.comparisons[0];
    expect(c).toMatchObject({
      step: "answer",
      scorer: "helpful",
      arm: "premium",
      control: "control",
      significant: true,
    });
    expect(c?.diff).toBeCloseTo(0.9 - (0.6 + 0.5 + 0.55 + 0.65 + 0.2) / 5, 10);
  });

  it("charts the daily mean of each arm", () => {
    expect(r.daily.map((d) => [d.arm, d.day, d.count])).toEqual([
      ["control", "2026-11-27", 2],
      ["control", "2026-11-28", 3],
      ["premium", "2026-11-27", 2],
      ["premium", "2026-11-28", 2],
    ]);
    const svg = scoreChartSvg(r, "helpful");
    expect(svg.match(/<path class="line" data-arm="(\w+)"/g)).toHaveLength(2);
    expect(svg).toContain('data-day="2026-11-28" data-mean="0.8750"');
  });
});
