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
    /** "Each setAlarm() is billed as a single row written"; alarm invocations are billed requests. */
    setAlarmIsRow: true,
    storedGbMonth: 0.2,
  },
  workflows: {
    source: "https://developers.cloudflare.com/workflows/reference/pricing/",
    requestPerM: 0.3,
    cpuMsPerM: 0.02,
    storedGbMonth: 0.2,
    /** Completed instances' state is kept this long on Workers Paid. */
    retentionDays: 30,
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
  /** setAlarm calls per run (measured; each is billed as a row written) and alarms that fire (billed requests). */
  alarmsPerRun: number;
  alarmInvocationsPerRun: number;
  /** Listing shard requests per run (measured) and rows they write per run (measured). */
  listingRequestsPerRun: number;
  listingRowsPerRun: number;
  /** Bytes a finished run keeps in its object (measured: its SQLite database) and in the listing. */
  storedBytesPerRun: number;
  listingBytesPerRun: number;
  /** How long a finished run is kept (RUN_RETENTION_S). */
  retentionDays: number;
  /** workerd CPU per run, ms (measured; Worker and Durable Objects together). */
  cpuMsPerRun: number;
  /** Wall time the run object is active per run, ms (the run's p50 net of /health). */
  activeMsPerRun: number;
}

export interface WorkflowsInputs {
  /** Workflows CPU per run (measured) and steps per run. */
  cpuMsPerRun: number;
  steps: number;
  /** What one instance keeps: taken as ours (the same step results in a SQLite-backed object). */
  storedBytesPerRun: number;
  /** Step Functions: wall time of the run (ours, p50 net). */
  activeMsPerRun: number;
}

export interface CostRow {
  contender: string;
  parts: string;
  usdPerMillion: number;
}

const usd = (x: number) => `$${x < 1 ? x.toFixed(3) : x.toFixed(2)}`;

const GB = 1024 ** 3;

/** One contender of ours: a default run, or an express one. */
function oursCost(label: string, c: CostInputs): CostRow {
  const w = PRICES.workers;
  const d = PRICES.durableObjects;
  const workerReq = w.requestPerM;
  const workerCpu = c.cpuMsPerRun * w.cpuMsPerM;
  // The invoke's RPC to the run's object, the listing's requests to its shard, alarms that fire.
  const requests = 1 + c.listingRequestsPerRun + c.alarmInvocationsPerRun;
  const doReq = requests * d.requestPerM;
  const doDuration = d.memoryGb * (c.activeMsPerRun / 1000) * d.gbSecondPerM;
  const rowCount = c.rowsPerRun + (d.setAlarmIsRow ? c.alarmsPerRun : 0) + c.listingRowsPerRun;
  const rows = rowCount * d.rowsWrittenPerM;
  const storage =
    (((c.storedBytesPerRun + c.listingBytesPerRun) * 1_000_000) / GB) *
    (c.retentionDays / 30) *
    d.storedGbMonth;
  return {
    contender: label,
    parts: `Worker request ${usd(workerReq)} + CPU ${c.cpuMsPerRun.toFixed(1)} ms ${usd(workerCpu)} + DO requests ${requests.toFixed(2)} ${usd(doReq)} + DO duration ${usd(doDuration)} + rows ${rowCount.toFixed(2)} (${c.rowsPerRun.toFixed(2)} run, ${c.alarmsPerRun.toFixed(2)} setAlarm, ${c.listingRowsPerRun.toFixed(2)} listing) ${usd(rows)} + storage ${((c.storedBytesPerRun + c.listingBytesPerRun) / 1024).toFixed(1)} KiB for ${c.retentionDays} days ${usd(storage)}`,
    usdPerMillion: workerReq + workerCpu + doReq + doDuration + rows + storage,
  };
}

export function costPerMillion(ours: CostInputs, express: CostInputs, wfIn: WorkflowsInputs): CostRow[] {
  const wf = PRICES.workflows;
  const sf = PRICES.stepFunctions;
  const wfStorage = ((wfIn.storedBytesPerRun * 1_000_000) / GB) * (wf.retentionDays / 30) * wf.storedGbMonth;
  const wfCost = wf.requestPerM + wfIn.cpuMsPerRun * wf.cpuMsPerM + wfStorage;
  // Standard: a transition per state entered (the steps) plus the start.
  const standard = ((wfIn.steps + 1) * 1_000_000 * sf.standardPerThousandTransitions) / 1000;
  const expressMs = Math.max(
    sf.expressRoundMs,
    Math.ceil(wfIn.activeMsPerRun / sf.expressRoundMs) * sf.expressRoundMs,
  );
  const sfExpress =
    sf.expressRequestPerM + sf.expressMinGb * (expressMs / 1000) * sf.expressGbSecond * 1_000_000;
  return [
    oursCost("workflow-edge, a default run (this bench)", ours),
    oursCost("workflow-edge, an express run (`history: failures`)", express),
    {
      contender: "Cloudflare Workflows",
      parts: `request ${usd(wf.requestPerM)} + CPU ${wfIn.cpuMsPerRun.toFixed(1)} ms ${usd(wfIn.cpuMsPerRun * wf.cpuMsPerM)} + storage ${(wfIn.storedBytesPerRun / 1024).toFixed(1)} KiB for ${wf.retentionDays} days ${usd(wfStorage)}`,
      usdPerMillion: wfCost,
    },
    {
      contender: "AWS Step Functions Standard",
      parts: `${wfIn.steps + 1} state transitions per run (execution history kept 90 days at no charge)`,
      usdPerMillion: standard,
    },
    {
      contender: "AWS Step Functions Express",
      parts: `request + ${expressMs} ms at ${sf.expressMinGb * 1024} MB (no history kept)`,
      usdPerMillion: sfExpress,
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
    `Prices (marginal, beyond each plan's included amounts; read ${p.read}): Workers $${p.workers.requestPerM}/M requests and $${p.workers.cpuMsPerM}/M CPU-ms (${p.workers.source}); Durable Objects $${p.durableObjects.requestPerM}/M requests, $${p.durableObjects.gbSecondPerM}/M GB-s at ${p.durableObjects.memoryGb * 1024} MB, $${p.durableObjects.rowsWrittenPerM}/M rows written (${p.durableObjects.source}); Workflows $${p.workflows.requestPerM}/M requests and $${p.workflows.cpuMsPerM}/M CPU-ms (${p.workflows.source}); Step Functions Standard $${p.stepFunctions.standardPerThousandTransitions}/1,000 transitions, Express $${p.stepFunctions.expressRequestPerM}/M requests and $${p.stepFunctions.expressGbSecond}/GB-s in ${p.stepFunctions.expressRoundMs} ms and 64 MB steps (${p.stepFunctions.source}). Every \`setAlarm()\` is billed as a row written and every alarm that fires as a request (the Durable Objects pricing page); stored data at $${p.durableObjects.storedGbMonth}/GB-month, held for the retention period (ours 7 days by default, Workflows ${p.workflows.retentionDays} days on Workers Paid). Workflows' storage per instance is taken as ours (the same step results in a SQLite-backed object; it cannot be measured locally). Counts come from this bench run; wall time is the 10-step p50 net of /health. The $5/month Workers Paid base is left out (per account, not per run).`,
  ].join("\n");
}
