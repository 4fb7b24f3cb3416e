/**
 * The shape of one bench's results (`npm run bench`): what scripts/bench.ts measures and
 * bench/report.ts and bench/report-table.ts render, apart from both so neither imports the other.
 */
import type { AblationRow } from "./ablation.ts";
import type { BundleSize, Startup } from "./bundle-size.ts";
import type { CpuPerRun } from "./cpu.ts";
import type { EngineProfile } from "./engine-profile.ts";
import type { Samples, Throughput } from "./latency.ts";
import type { ListingCheck } from "./listing-check.ts";
import type { WorkerdProfile } from "./workerd-profile.ts";

export interface WriteCounts {
  rows: number;
  alarms: number;
  byStatement: Record<string, number>;
  /** Bytes the run's object stores once it has finished (its SQLite database; 0 when it keeps nothing). */
  bytes?: number;
  /** What those rows hold: the bytes of their keys and values (0 when it keeps nothing). */
  dataBytes?: number;
}

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  freeGiB: number;
  load: string;
  /** filled in when the bench ends */
  loadAtEnd?: string;
  os: string;
  node: string;
  wrangler: string;
  workerd: string;
  date: string;
}

/** The four ways a 10-step pipeline runs in the bench. */
export type Contender = "ours" | "unlisted" | "bare" | "workflows" | "express";

export interface IndexStats {
  records: number;
  recordedRows: number;
  registrations: number;
  writes: WriteCounts;
}

export interface Results {
  /** p50/p99 by contender and pipeline size (unlisted and workflows: 10 steps only) */
  latency: Record<Contender, Record<number, Samples>>;
  /** GET /health on the same server, interleaved with the runs: the fixed HTTP cost of a request */
  health: Samples;
  /** 10 steps: parts of ours switched off, parts added to the bare floor (bench/ablation.ts) */
  ablation: AblationRow[];
  throughput: Array<{ concurrency: number; results: Partial<Record<Contender, Throughput>> }>;
  /** workerd CPU (user + system) per 10-step run, null when /proc could not be read */
  cpu: Partial<Record<Contender, CpuPerRun>> | null;
  listing: ListingCheck;
  indexStats: IndexStats;
  /**
   * One workflow at load (64 clients for a few seconds, then its shards' flush window): its runs,
   * their rate, and the rows the listing wrote for them.
   */
  listingAtLoad: { runs: number; runsPerSecond: number; rows: number };
  /** runs of ours (listing on or off) the bench made before the listing check */
  oursRuns: number;
  /** of those, with the listing on (every pipeline size) */
  listedRuns: number;
  /** `run.finished` log lines the Worker wrote by then */
  logLines: number;
  capacity: { perSecond: number; writes: number; concurrency: number };
  /** CPU profiles inside workerd: ours 10, bare 10, ours 50. */
  workerd: WorkerdProfile[];
  writes: Record<number, WriteCounts>;
  /** A 10-step express run (`history: failures`) that completed before its answer. */
  expressWrites: WriteCounts;
  bareWrites: Record<number, WriteCounts>;
  samples: number;
  bundle: BundleSize;
  startup: Startup;
  /** The 10-step run and the bare DO through `wrangler dev` (what `npm start` serves), p50s (bench/wrangler-dev.ts). */
  wranglerDev: { health: number; ours: number; bare: number } | null;
  /** What a default 10-step run costs per million (bench/cost.ts, from this run's counts). */
  defaultUsdPerMillion?: number;
  engine: EngineProfile;
  machine: MachineInfo;
  totalS: number;
  quick: boolean;
}
