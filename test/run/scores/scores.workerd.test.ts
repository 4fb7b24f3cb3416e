/**
 * Scores and variants (docs/file-format.md, "Scores" and "Variants") on real runs: `expr` scores in
 * the answer, a judge after it (answered by the model stub differently from the judged step), a
 * slow judge that delays nothing, a judge over its budget that fails nothing, a kill between the
 * answer and the judge, arms split by weight and kept by key and by re-runs, and the listing and
 * the report that read them.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { readAllEvents } from "../../support/sse.ts";
import { call, type Envelope, invoke, run, uniqueKey, waitForRun } from "../../worker/harness.ts";

const reply = (title: string) => `REPLY=${JSON.stringify({ title, priority: "low" })}`;

/** The run once its judged scores are in (they come after the answer). */
function judged(runId: string, names: string[]) {
  return poll(
    `the judged scores ${names.join(", ")} of run ${runId}`,
    async () => (await (await call(`/runs/${runId}`)).json()) as Envelope,
    (e) => names.every((n) => e.scores.some((s: Envelope) => s.name === n)),
  );
}

describe("scores", () => {
  it("scores a step with its expressions as it completes, and records what is not a score as an error", async () => {
    const e = await run("score-answer", {
      text: reply("Refund for order A-17"),
      must: "A-17",
      customer: uniqueKey("c"),
    });
    const byName = Object.fromEntries(e.scores.map((s: Envelope) => [s.name, s]));
    expect(byName.cites).toMatchObject({ step: "answer", value: 1, error: null, reason: null });
    expect(byName.cites.variant).toBe(e.steps[0].variant);
    expect(byName.length.value).toBeNull();
    expect(byName.length.error).toBe("score 21 is outside 0..1");
    expect(e.status).toBe("complete");
  });

  it("tells a run's listeners its scores: expression scores after the step's completion, judged ones before the end", async () => {
    const e = await run("score-answer", {
      text: reply("Refund for order A-17"),
      must: "A-17",
      judge_reply: JSON.stringify({ score: 0.5, reason: "fine" }),
    });
    await judged(e.run_id, ["helpful"]);
    const events = await readAllEvents(await call(`/runs/${e.run_id}/events`));
    const seen = events.map((ev) => `${ev.event} ${String(ev.data.step ?? "")}`.trim());
    const scored = events.filter((ev) => ev.event === "step.scored");
    expect(scored).toHaveLength(2);
    // The expression scores right after the step completed, with its arm.
    expect(seen.indexOf("step.scored answer")).toBe(seen.indexOf("step.completed answer") + 1);
    expect(scored[0]?.data).toMatchObject({ step: "answer", variant: e.steps[0].variant });
    expect(((scored[0]?.data.scores ?? []) as Envelope[]).map((s) => s.name).sort()).toEqual([
      "cites",
      "length",
    ]);
    // The judge's, written after the answer, just before the end where a reader stops.
    expect(seen.at(-2)).toBe("step.scored answer");
    expect(scored[1]?.data.scores).toEqual([
      expect.objectContaining({ name: "helpful", value: 0.5, reason: "fine", error: null }),
    ]);
  });

  it("judges after the answer, with the judge's own answer, and counts its cost outside the run's", async () => {
    const e = await run("score-answer", {
      text: reply("Refund"),
      must: "nothing",
      judge_reply: JSON.stringify({ score: 0.75, reason: "clear and short" }),
    });
    // The answer came before the judge: its envelope holds no judged score.
    expect(e.scores.some((s: Envelope) => s.name === "helpful")).toBe(false);
    const after = await judged(e.run_id, ["helpful"]);
    const helpful = after.scores.find((s: Envelope) => s.name === "helpful");
    expect(helpful).toMatchObject({ step: "answer", value: 0.75, reason: "clear and short", error: null });
    expect(Date.parse(helpful.at)).toBeGreaterThan(Date.parse(after.finished_at));
    expect(after.totals.scores_cost_usd).toBeGreaterThan(0);
    // The run's own cost is its step's; the judge is counted apart.
    expect(after.totals.cost_usd).toBe(e.totals.cost_usd);
  });

  it("never delays the answer for a slow judge", async () => {
    const e = await run("score-slow-judge", {
      text: reply("Slow"),
      judge_reply: JSON.stringify({ score: 1 }),
    });
    expect(e.status).toBe("complete");
    expect(e.scores).toEqual([]);
    const after = await judged(e.run_id, ["helpful"]);
    // The judge answered 300 ms after the stub was asked: well after the run had answered.
    const at = Date.parse(after.scores[0].at);
    expect(at - Date.parse(e.finished_at)).toBeGreaterThanOrEqual(300);
  });

  it("records a judge over its budget as an error on its score, never failing the run", async () => {
    const e = await run("score-poor-judge", { text: reply("Poor") });
    const after = await judged(e.run_id, ["helpful"]);
    expect(after.status).toBe("complete");
    expect(after.scores[0]).toMatchObject({ name: "helpful", value: null });
    expect(after.scores[0].error).toMatch(/^budget_exceeded: /);
  });

  it("judges once a run killed between its answer and its judge", async () => {
    const res = await invoke(
      "score-slow-judge",
      { text: reply("Killed"), judge_reply: JSON.stringify({ score: 0.4 }) },
      { wait: 30 },
    );
    const e = (await res.json()) as Envelope;
    const stub = env.RUNS.get(env.RUNS.idFromString(e.run_id));
    // The slow judge is under way (its model answers after 300 ms): the object goes now.
    await runInDurableObject(stub, (_o, state) => state.abort("killed while the judge waits")).catch(
      () => {},
    );
    const after = await judged(e.run_id, ["helpful"]);
    expect(after.scores.filter((s: Envelope) => s.name === "helpful")).toHaveLength(1);
    expect(after.scores[0].value).toBe(0.4);
  });

  it("lists runs by score, and reports them per arm", async () => {
    const must = uniqueKey("must");
    const hits = await Promise.all(
      [0, 1, 2].map((i) =>
        run("score-answer", { text: reply(`Order ${must} #${i}`), must, customer: uniqueKey("c") }),
      ),
    );
    const miss = await run("score-answer", { text: reply("Nothing here"), must, customer: uniqueKey("c") });
    const low = await poll(
      "the run scored 0 in the listing",
      async () =>
        (await (await call("/runs?workflow=score-answer&score.cites.lt=0.5&limit=100")).json()) as Envelope,
      (l) => l.runs.some((r: Envelope) => r.run_id === miss.run_id),
    );
    expect(low.runs.map((r: Envelope) => r.run_id)).not.toContain(hits[0].run_id);
    const high = (await (
      await call("/runs?workflow=score-answer&score.cites.gte=1&limit=100")
    ).json()) as Envelope;
    expect(high.runs.map((r: Envelope) => r.run_id)).toEqual(
      expect.arrayContaining(hits.map((h) => h.run_id)),
    );
    const bad = await call("/runs?workflow=score-answer&score.cites.lt=2");
    expect(bad.status).toBe(400);
    const report = (await (await call("/workflows/score-answer/scores")).json()) as Envelope;
    const cites = report.scores.filter((s: Envelope) => s.step === "answer" && s.scorer === "cites");
    expect(cites.map((s: Envelope) => s.arm).sort()).toEqual(expect.arrayContaining(["control"]));
    for (const s of cites) expect(s).toMatchObject({ version: "1.0.0" });
    expect(cites.reduce((n: number, s: Envelope) => n + s.count, 0)).toBeGreaterThanOrEqual(4);
    const chart = await call("/workflows/score-answer/scores?chart=cites");
    expect(chart.headers.get("content-type")).toContain("image/svg+xml");
    expect(await chart.text()).toContain('data-scorer="cites"');
  });
});

describe("variants", () => {
  it("splits 200 runs by weight, the same key always to the same arm", async () => {
    const keys = Array.from({ length: 200 }, (_, i) => `customer-${i}`);
    const arms: string[] = [];
    for (let i = 0; i < keys.length; i += 25) {
      const batch = await Promise.all(
        keys
          .slice(i, i + 25)
          .map((customer) => run("score-answer", { text: reply("Split"), must: "x", customer })),
      );
      arms.push(...batch.map((e) => e.steps[0].variant as string));
    }
    const cheaper = arms.filter((a) => a === "cheaper").length;
    // Weights 3:1: a quarter of the keys, within what 200 draws allow.
    expect(cheaper).toBeGreaterThan(30);
    expect(cheaper).toBeLessThan(70);
    expect(arms.filter((a) => a === "control").length).toBe(200 - cheaper);
    const again = await run("score-answer", { text: reply("Again"), must: "x", customer: keys[7] });
    expect(again.steps[0].variant).toBe(arms[7]);
  }, 120_000);

  it("keeps the arm when the run is re-run from the split step", async () => {
    const e = await run("score-answer", { text: reply("Rerun me"), must: "x" });
    const res = await call(`/runs/${e.run_id}/rerun`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=30" },
      body: JSON.stringify({ from: "answer" }),
    });
    const rerun = (await res.json()) as Envelope;
    const done = rerun.status ? rerun : await waitForRun(rerun.run_id);
    expect(done.rerun_of).toBe(e.run_id);
    expect(done.steps[0].reused_from).toBeNull();
    expect(done.steps[0].variant).toBe(e.steps[0].variant);
  });
});
