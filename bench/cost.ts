/**
 * What one million 10-step runs cost at published list prices (docs/operations.md), computed from what the
 * bench measured: rows written, listing writes, CPU per run and run wall time. Marginal prices
 * (beyond each plan's included amounts); every price names its page and the date it was read.
 */

/** Read 2026-11-25. */
export const PRICES = {
  read: "2026-11-25",
  workers: {
    source: "https://developers.cloudflare.com/workers/platform/pricing/",
    requestPerM: 0.3,
    cpuMsPerM: 0.02,
  },
  durableObjects: {
    source: "https://developers.cloudflare.com/durable-objects/platform/pricing/",
    requestPerM: 0.15,
    gbSecondPerM: 12.5,
    memoryGb: 0.125,
    rowsWrittenPerM: 1.0,
  },
  workflows: {
    source: "https://developers.cloudflare.com/workflows/reference/pricing/",
    requestPerM: 0.3,
    cpuMsPerM: 0.02,
  },
  stepFunctions: {
    source: "https://aws.amazon.com/step-functions/pricing/",
    standardPerThousandTransitions: 0.025,
    expressRequestPerM: 1.0,
    expressGbSecond: 0.00001667,
    expressMinGb: 0.0625,
    expressRoundMs: 100,
  },
} as const;

export interface CostInputs {
  /** SQLite rows the run object writes per run (measured). */
  rowsPerRun: number;
  /** Listing shard requests per run (measured) and rows they write per run (measured). */
  listingRequestsPerRun: number;
  listingRowsPerRun: number;
  /** workerd CPU per run, ms (measured; Worker and Durable Objects together). */
  cpuMsPerRun: number;
  /** Wall time the run object is active per run, ms (the run's p50 net of /health). */
  activeMsPerRun: number;
  /** Workflows CPU per run (measured) and steps per run. */
  workflowsCpuMsPerRun: number;
  steps: number;
}

export interface CostRow {
  contender: string;
  parts: string;
  usdPerMillion: number;
}

const usd = (x: number) => `$${x < 1 ? x.toFixed(3) : x.toFixed(2)}`;

export function costPerMillion(c: CostInputs): CostRow[] {
  const w = PRICES.workers;
  const d = PRICES.durableObjects;
  const wf = PRICES.workflows;
  const sf = PRICES.stepFunctions;
  const workerReq = w.requestPerM;
  const workerCpu = c.cpuMsPerRun * w.cpuMsPerM;
  // The invoke's RPC to the run's object, and the listing's requests to its shard.
  const doReq = (1 + c.listingRequestsPerRun) * d.requestPerM;
  const doDuration = d.memoryGb * (c.activeMsPerRun / 1000) * d.gbSecondPerM;
  const rows = (c.rowsPerRun + c.listingRowsPerRun) * d.rowsWrittenPerM;
  const ours = workerReq + workerCpu + doReq + doDuration + rows;
  const wfCost = wf.requestPerM + c.workflowsCpuMsPerRun * wf.cpuMsPerM;
  // Standard: a transition per state entered (the steps) plus the start.
  const standard = ((c.steps + 1) * 1_000_000 * sf.standardPerThousandTransitions) / 1000;
  const expressMs = Math.max(
    sf.expressRoundMs,
    Math.ceil(c.activeMsPerRun / sf.expressRoundMs) * sf.expressRoundMs,
  );
  const express =
    sf.expressRequestPerM + sf.expressMinGb * (expressMs / 1000) * sf.expressGbSecond * 1_000_000;
  return [
    {
      contender: "workflow-edge (this bench)",
      parts: `Worker request ${usd(workerReq)} + CPU ${c.cpuMsPerRun.toFixed(1)} ms ${usd(workerCpu)} + DO requests ${(1 + c.listingRequestsPerRun).toFixed(2)} ${usd(doReq)} + DO duration ${usd(doDuration)} + rows ${(c.rowsPerRun + c.listingRowsPerRun).toFixed(2)} ${usd(rows)}`,
      usdPerMillion: ours,
    },
    {
      contender: "Cloudflare Workflows",
      parts: `request ${usd(wf.requestPerM)} + CPU ${c.workflowsCpuMsPerRun.toFixed(1)} ms ${usd(c.workflowsCpuMsPerRun * wf.cpuMsPerM)} (storage billed per GB-month, not per write)`,
      usdPerMillion: wfCost,
    },
    {
      contender: "AWS Step Functions Standard",
      parts: `${c.steps + 1} state transitions per run`,
      usdPerMillion: standard,
    },
    {
      contender: "AWS Step Functions Express",
      parts: `request + ${expressMs} ms at ${sf.expressMinGb * 1024} MB`,
      usdPerMillion: express,
    },
  ];
}

export function renderCost(rows: CostRow[]): string {
  const p = PRICES;
  return [
    "| contender | what one run pays for | USD per million 10-step runs |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.contender} | ${r.parts} | ${usd(r.usdPerMillion)} |`),
    "",
    `Prices (marginal, beyond each plan's included amounts; read ${p.read}): Workers $${p.workers.requestPerM}/M requests and $${p.workers.cpuMsPerM}/M CPU-ms (${p.workers.source}); Durable Objects $${p.durableObjects.requestPerM}/M requests, $${p.durableObjects.gbSecondPerM}/M GB-s at ${p.durableObjects.memoryGb * 1024} MB, $${p.durableObjects.rowsWrittenPerM}/M rows written (${p.durableObjects.source}); Workflows $${p.workflows.requestPerM}/M requests and $${p.workflows.cpuMsPerM}/M CPU-ms (${p.workflows.source}); Step Functions Standard $${p.stepFunctions.standardPerThousandTransitions}/1,000 transitions, Express $${p.stepFunctions.expressRequestPerM}/M requests and $${p.stepFunctions.expressGbSecond}/GB-s in ${p.stepFunctions.expressRoundMs} ms and 64 MB steps (${p.stepFunctions.source}). Counts come from this bench run; wall time is the 10-step p50 net of /health. Storage held for the retention period and the $5/month Workers Paid base are left out (per account, not per run).`,
  ].join("\n");
}
