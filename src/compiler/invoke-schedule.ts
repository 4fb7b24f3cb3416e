/**
 * Compiles `schedule` (docs/triggers.md, "Schedules"): each entry's cron checked and required in
 * wrangler.toml `[triggers] crons` (the error shows the line to set), its params checked against
 * params.schema. Root workflows only.
 */
import type { CompiledSchedule, JsonObject } from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { describeViolations, validateJson } from "../engine/schema.ts";
import { cronProblem } from "./cron.ts";
import type { InvokeContext, Report } from "./invoke-context.ts";
import { cronsLine } from "./wrangler-config.ts";
import type { DataPath } from "./yaml-source.ts";

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
      const problem = cronProblem(cron);
      if (problem) {
        err(at("cron"), `invalid cron \`${cron}\`: ${problem}`);
      } else {
        const facts = ctx.wrangler();
        if (!facts.crons.includes(cron)) {
          err(
            at("cron"),
            facts.found
              ? `cron \`${cron}\` is not listed in ${facts.display} \`[triggers] crons\`, so it would never fire; set:\n[triggers]\n${cronsLine(facts, cron)}`
              : `cron \`${cron}\` needs ${facts.display}, which does not exist; it must list the cron:\n[triggers]\n${cronsLine(facts, cron)}`,
          );
        }
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
      schedule.push({ cron, params });
    });
  }

  return schedule;
}
