/**
 * Compiles `notify` (docs/file-format.md, "Run notifications"): where to hear about finished
 * runs, each entry's URL (a literal or `{{ env.NAME }}`), the statuses it hears of, its
 * Standard Webhooks signing secret and its retry schedule (docs/triggers.md, "Deliveries"). Root
 * workflows only.
 */
import type { CompiledNotify } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { envRefName } from "../env-refs.ts";
import type { DataPath } from "../yaml-source.ts";
import type { InvokeContext, Report, TriggerTemplate } from "./invoke-context.ts";

type Obj = Record<string, unknown>;

export function compileNotify(
  d: Obj,
  ctx: InvokeContext,
  err: Report,
  template: TriggerTemplate,
): CompiledNotify[] {
  const notify: CompiledNotify[] = [];
  if (Array.isArray(d.notify)) {
    if (!ctx.invocable) {
      err(["notify"], "`notify` is for invocable workflows (a sub-workflow's run is its caller's)", "key");
    }
    d.notify.forEach((entry, i) => {
      if (!isObject(entry) || typeof entry.url !== "string") return;
      const at = (...k: string[]): DataPath => ["notify", i, ...k];
      const url = template(entry.url, at("url"), "`notify.url`", ["env"], true);
      if (url.t === "lit" && typeof url.v === "string" && !/^https?:\/\/[^/]/i.test(url.v.trim())) {
        err(
          at("url"),
          `\`notify.url\` must be an absolute http(s) URL (or \`{{ env.NAME }}\`), got \`${url.v}\``,
        );
      }
      let sign: CompiledNotify["sign"] = null;
      if (isObject(entry.sign)) {
        const n = envRefName(entry.sign.secret);
        if (n === null) {
          err(
            at("sign", "secret"),
            "`notify.sign.secret` must be `{{ env.NAME }}` (an env var holding `whsec_<base64>`)",
          );
        } else {
          ctx.useEnv(n, at("sign", "secret"));
          sign = { secretEnv: n };
        }
      }
      const on = Array.isArray(entry.on)
        ? entry.on.filter((x): x is CompiledNotify["on"][number] =>
            ["complete", "failed", "canceled", "compensation_failed"].includes(x),
          )
        : ["failed" as const];
      // Ranges (1..20 waits of 0..86,400 s) are the schema's.
      const schedule = isObject(entry.retry) ? entry.retry.schedule_s : undefined;
      const retry =
        Array.isArray(schedule) && schedule.length > 0 && schedule.every((x) => typeof x === "number")
          ? { scheduleS: schedule as number[] }
          : null;
      notify.push({ url, on, sign, ...(retry ? { retry } : {}) });
    });
  }

  return notify;
}
