/**
 * Compiles how a workflow shapes bursts of invokes (docs/triggers.md, "Shaping bursts"):
 * `invoke.concurrency` (with `on_full`), `invoke.throttle`, `invoke.debounce`, `invoke.batch`,
 * `invoke.priority` and `cancel_on`. Ranges and names are checked by the structure check against
 * schema/workflow.schema.json; here: what the schema cannot say (debounce and batch exclude each
 * other, a debounce's `max_wait_s` is at least its `period_s`, keys and priority read only
 * `params` and `request`, `cancel_on` is for invocable workflows).
 */
import type { CompiledCancelOn, CompiledInvoke, Template } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import type { DataPath } from "../yaml-source.ts";
import type { InvokeContext, Report, TriggerTemplate } from "./invoke-context.ts";

type Obj = Record<string, unknown>;

export type FlowControl = Pick<
  CompiledInvoke,
  "concurrency" | "throttle" | "debounce" | "batch" | "priority"
>;

const DEFAULT_THROTTLE_PERIOD_S = 60;
const DEFAULT_BATCH_WAIT_S = 10;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const ms = (s: number) => Math.round(s * 1000);

/** `invoke.concurrency`, `throttle`, `debounce`, `batch` and `priority` (only those the file sets). */
export function compileFlowControl(invoke: Obj, err: Report, template: TriggerTemplate): FlowControl {
  /** `invoke.<field>.key`: a template over `params` and `request` (what an invoke brings). */
  const key = (field: string, value: unknown): Template | null =>
    typeof value === "string"
      ? template(value, ["invoke", field, "key"], `\`invoke.${field}.key\``, ["params", "request"])
      : null;
  const out: FlowControl = {};
  const cc = invoke.concurrency;
  if (isObject(cc) && num(cc.limit) !== null) {
    const onFull = cc.on_full === "skip" || cc.on_full === "replace" ? cc.on_full : null;
    out.concurrency = {
      limit: cc.limit as number,
      key: key("concurrency", cc.key),
      ...(onFull ? { onFull } : {}),
    };
  }
  const th = invoke.throttle;
  if (isObject(th) && num(th.limit) !== null) {
    out.throttle = {
      limit: th.limit as number,
      periodMs: ms(num(th.period_s) ?? DEFAULT_THROTTLE_PERIOD_S),
      key: key("throttle", th.key),
    };
  }
  const db = invoke.debounce;
  if (isObject(db) && num(db.period_s) !== null) {
    const period = db.period_s as number;
    const maxWait = num(db.max_wait_s) ?? 10 * period;
    if (maxWait < period) {
      err(
        ["invoke", "debounce", "max_wait_s"],
        `\`invoke.debounce.max_wait_s\` (${maxWait}) is shorter than \`period_s\` (${period}): a debounced run may wait at most max_wait_s after its first invoke, so it must be at least period_s`,
      );
    }
    out.debounce = {
      periodMs: ms(period),
      maxWaitMs: ms(Math.max(maxWait, period)),
      key: key("debounce", db.key),
    };
  }
  const bt = invoke.batch;
  if (isObject(bt) && num(bt.max_items) !== null) {
    if (out.debounce) {
      err(
        ["invoke", "batch"],
        "`invoke.debounce` and `invoke.batch` exclude each other: a debounced run keeps the last invoke's params, a batch run all of them; choose one",
        "key",
      );
    }
    out.batch = {
      maxItems: bt.max_items as number,
      maxWaitMs: ms(num(bt.max_wait_s) ?? DEFAULT_BATCH_WAIT_S),
      key: key("batch", bt.key),
    };
  }
  if (typeof invoke.priority === "string") {
    out.priority = template(invoke.priority, ["invoke", "priority"], "`invoke.priority`", [
      "params",
      "request",
    ]);
  }
  return out;
}

/** `cancel_on`: keyed signals that cancel the runs invoked with their key (invocable workflows). */
export function compileCancelOn(
  d: Obj,
  ctx: InvokeContext,
  err: Report,
  template: TriggerTemplate,
): CompiledCancelOn[] {
  if (!Array.isArray(d.cancel_on)) return [];
  if (!ctx.invocable) {
    err(
      ["cancel_on"],
      "`cancel_on` is for invocable workflows (a sub-workflow's run is its caller's)",
      "key",
    );
  }
  const out: CompiledCancelOn[] = [];
  d.cancel_on.forEach((entry, i) => {
    if (!isObject(entry) || typeof entry.signal !== "string") return;
    const at = (k: string): DataPath => ["cancel_on", i, k];
    const key =
      typeof entry.key === "string"
        ? template(entry.key, at("key"), "`cancel_on.key`", ["params", "request"])
        : null;
    out.push({ signal: entry.signal, key });
  });
  return out;
}
