/**
 * Compiles `schedule` (docs/triggers.md, "Schedules"): each entry's cron checked, its `timezone`
 * (an IANA zone, default UTC) known, a cron that can never fire refused, and the UTC crons that
 * cover the entry (src/common/local-time.ts: the entry's own cron in UTC) required in wrangler.toml
 * `[triggers] crons` (the error shows the line to set); its params checked against params.schema.
 * Root workflows only.
 */
import type { CompiledSchedule, JsonObject } from "../../../bundle.ts";
import { isObject } from "../../../common/guards.ts";
import { coveringCrons, isUtc, nextFires, patternProblem, zoneProblem } from "../../../common/local-time.ts";
import { describeViolations, validateJson } from "../../../engine/schema.ts";
import { cronsLine, type WranglerFacts } from "../../wrangler-config.ts";
import type { DataPath } from "../../yaml-source.ts";
import type { InvokeContext, Report } from "../invoke-context.ts";
import { cronProblem } from "./cron.ts";

type Obj = Record<string, unknown>;

export function compileSchedules(d: Obj, ctx: InvokeContext, err: Report): CompiledSchedule[] {
  const schedule: CompiledSchedule[] = [];
  if (Array.isArray(d.schedule)) {
    if (!ctx.invocable) {
      err(
        ["schedule"],
        "`schedule` is for invocable workflows (files directly in workflows/ named *.workflow.yaml)",
        "key",
      );
    }
    d.schedule.forEach((entry, i) => {
      if (!isObject(entry) || typeof entry.cron !== "string") return;
      const cron = entry.cron;
      const at = (k: string): DataPath => ["schedule", i, k];
      const timezone = typeof entry.timezone === "string" ? entry.timezone : "UTC";
      const zone = zoneProblem(timezone);
      if (zone) err(at("timezone"), zone);
      const problem = cronProblem(cron);
      if (problem) {
        err(at("cron"), `invalid cron \`${cron}\`: ${problem}`);
      } else if (!zone) {
        const missing = fires(cron, timezone, at, err) ? missingTriggers(cron, timezone, ctx) : [];
        if (missing.length > 0) err(at("cron"), triggersMessage(cron, timezone, missing, ctx.wrangler()));
      }
      const params = isObject(entry.params) ? (entry.params as JsonObject) : {};
      const violations = validateJson(ctx.paramsSchema, params);
      if (violations.length > 0) {
        const list = describeViolations(violations, Number.POSITIVE_INFINITY);
        err(
          entry.params === undefined ? at("cron") : at("params"),
          `schedule params do not match params.schema: ${list}`,
        );
      }
      schedule.push({ cron, timezone: isUtc(timezone) ? "UTC" : timezone, params });
    });
  }

  return schedule;
}

/**
 * A cron in a zone is worked out by croner, which must read it; a cron with no date at all
 * (`0 0 30 2 *`) would never start a run.
 */
function fires(cron: string, timezone: string, at: (k: string) => DataPath, err: Report): boolean {
  const unread = patternProblem(cron);
  if (unread !== null) {
    if (isUtc(timezone)) return true;
    err(
      at("cron"),
      `cron \`${cron}\` cannot be used with a \`timezone\`: ${unread} is for UTC schedules only`,
    );
    return false;
  }
  if (nextFires({ cron, timezone }, Date.now(), 1).length > 0) return true;
  err(at("cron"), `cron \`${cron}\` never fires: no date matches it`);
  return false;
}

/** The UTC crons wrangler.toml must list for the entry and does not. */
function missingTriggers(cron: string, timezone: string, ctx: InvokeContext): string[] {
  const listed = ctx.wrangler().crons;
  return coveringCrons({ cron, timezone }, Date.now()).filter((c) => !listed.includes(c));
}

function triggersMessage(cron: string, timezone: string, missing: string[], facts: WranglerFacts): string {
  const line = `[triggers]\n${cronsLine(facts, missing)}`;
  const quoted = missing.map((c) => `\`${c}\``).join(", ");
  if (isUtc(timezone)) {
    return facts.found
      ? `cron \`${cron}\` is not listed in ${facts.display} \`[triggers] crons\`, so it would never fire; set:\n${line}`
      : `cron \`${cron}\` needs ${facts.display}, which does not exist; it must list the cron:\n${line}`;
  }
  const what = `cron \`${cron}\` in ${timezone} fires at the UTC crons ${quoted}`;
  return facts.found
    ? `${what}, which ${facts.display} \`[triggers] crons\` does not list, so it would not fire all year; set:\n${line}`
    : `${what}; they must be listed in ${facts.display}, which does not exist:\n${line}`;
}
