/**
 * How a listing shard keeps an entry in its batch rows, and how its filters read one: pure, apart
 * from the shard (listing-shard.ts) so both stay small.
 */
import type { RunStatus } from "../../engine/types.ts";
import type { CompensationStatus, IndexRow, ListedScores } from "./listing.ts";

/**
 * One entry as a batch row stores it: [run_id, created_ms, status, finished_ms, deliveries, failed],
 * then the compensation's status when the run has one or search values, then its search values
 * (docs/http-api.md, "Search keys") when it has them: in the same row, no row more (entries written
 * before have six or seven).
 */
export type Packed =
  | PackedBase
  | [...PackedBase, CompensationStatus | null]
  | [...PackedBase, CompensationStatus | null, Record<string, string> | null]
  | [...PackedBase, CompensationStatus | null, Record<string, string> | null, ListedScores];
type PackedBase = [string, number, string, number | null, number, number];

export const pack = (r: IndexRow): Packed => {
  const p: Packed = [
    r.run_id,
    r.created_ms,
    r.status,
    r.finished_ms,
    r.deliveries ?? 0,
    r.failed_deliveries ?? 0,
  ];
  if (r.scores) return [...p, r.compensation ?? null, r.search ?? null, r.scores];
  if (r.search) return [...p, r.compensation ?? null, r.search];
  return r.compensation ? [...p, r.compensation] : p;
};
export const unpack = (p: Packed): IndexRow => ({
  run_id: p[0],
  created_ms: p[1],
  status: p[2] as RunStatus,
  finished_ms: p[3],
  deliveries: p[4],
  failed_deliveries: p[5],
  ...(p[6] ? { compensation: p[6] } : {}),
  ...(p[7] ? { search: p[7] } : {}),
  ...(p[8] ? { scores: p[8] } : {}),
});

/**
 * Whether an entry passes one filter: a search value (`key` = value), or a score
 * (`score.<name>.lt` / `score.<name>.gte` = a number: any score of that name below, or at least).
 */
export function matches(r: IndexRow, key: string, value: string): boolean {
  if (!key.startsWith("score.")) return r.search?.[key] === value;
  const [, name, op] = key.split(".");
  const x = Number(value);
  return (r.scores?.s ?? []).some(([, n, v]) => n === name && (op === "lt" ? v < x : v >= x));
}
