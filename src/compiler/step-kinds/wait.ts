/**
 * The `wait` step kind (docs/file-format.md): exactly one of `signal` (a name of `[a-z0-9_-]`, 1..64; an
 * optional `key` template; `timeout_s`, required; an optional `schema` for the body), `for_s` (a
 * durable sleep) or `until` (a template rendering an RFC 3339 time).
 */
import { type JsonSchema, SIGNAL_NAME } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { checkExpression, rootPaths } from "../expressions.ts";
import { checkUserSchema } from "../json-schema-check.ts";
import { splitTemplate } from "../templates.ts";
import { type StepCompileContext, type StepKindCompiler, stepPath } from "./step-base.ts";

const KEY_ROOTS = ["params", "env", "step", "request"];

export const waitStep: StepKindCompiler<"wait"> = {
  compile(i, s, base, c) {
    const at = (...rest: Array<string | number>) => stepPath(i, ...rest);
    const label = c.label(i);
    const w = isObject(s.wait) ? s.wait : {};
    const given = ["signal", "for_s", "until"].filter((k) => w[k] !== undefined);
    if (given.length !== 1) {
      c.err(
        given.length === 0 ? at("wait") : at("wait", given[1] as string),
        `${label}: a wait is exactly one of \`signal\`, \`for_s\` and \`until\`${given.length > 1 ? `, not ${given.map((k) => `\`${k}\``).join(" and ")}` : ""}`,
        given.length === 0 ? "value" : "key",
      );
    }
    let signal: ReturnType<typeof compileSignal> = null;
    function compileSignal() {
      if (typeof w.signal !== "string") return null;
      if (!SIGNAL_NAME.test(w.signal)) {
        c.err(
          at("wait", "signal"),
          `${label}: signal name \`${w.signal}\` must be 1 to 64 of a-z, 0-9, \`_\` and \`-\``,
        );
      }
      if (typeof w.timeout_s !== "number") {
        c.err(
          at("wait"),
          `${label}: a wait for a signal needs \`timeout_s\` (seconds; the run's deadline still holds)`,
        );
      }
      let schema: JsonSchema | null = null;
      if (w.schema !== undefined) {
        checkUserSchema(c.file, at("wait", "schema"), w.schema, "wait.schema", c.sink);
        schema = w.schema as JsonSchema;
      }
      if (typeof w.key === "string") {
        // A key read from nothing would be null for every run: name the roots it may read.
        let exprs: string[] = [];
        try {
          exprs = splitTemplate(w.key).flatMap((seg) => ("expr" in seg ? [seg.expr] : []));
        } catch {
          // c.template reports a malformed template.
        }
        for (const e of exprs) {
          const parsed = checkExpression(e, c.idSet);
          if (!parsed.ok) continue;
          for (const read of rootPaths(parsed.ast)) {
            const root = read[0] ?? "";
            if (!KEY_ROOTS.includes(root)) {
              c.err(
                at("wait", "key"),
                `${label}: the wait's \`key\` reads \`${root}\`; it may read ${KEY_ROOTS.map((r) => `\`${r}\``).join(", ")}`,
              );
            }
          }
        }
      }
      return {
        name: w.signal,
        key: w.key === undefined ? null : c.template(i, w.key, at("wait", "key")),
        timeoutS: typeof w.timeout_s === "number" ? w.timeout_s : 0,
        schema,
      };
    }
    signal = compileSignal();
    for (const k of ["key", "timeout_s", "schema"]) {
      if (w[k] !== undefined && w.signal === undefined) {
        c.err(at("wait", k), `${label}: \`${k}\` belongs to a wait for a \`signal\``, "key");
      }
    }
    const until = typeof w.until === "string" ? c.template(i, w.until, at("wait", "until")) : null;
    if (until?.t === "lit" && typeof until.v === "string" && Number.isNaN(Date.parse(until.v))) {
      c.err(
        at("wait", "until"),
        `${label}: \`until\` must be an RFC 3339 time (or \`{{ expr }}\` giving one)`,
      );
    }
    warnPastDeadline(
      c,
      i,
      signal?.timeoutS ?? (typeof w.for_s === "number" ? w.for_s : null),
      until !== null,
    );
    return {
      ...base,
      kind: "wait",
      signal,
      forS: typeof w.for_s === "number" ? w.for_s : null,
      until,
    };
  },
};

/**
 * A wait that can outlast the run's deadline ends the run `timeout` first (the deadline holds
 * whatever a step waits for): a warning, with what to raise. `seconds`: a signal's `timeout_s`
 * or a sleep's `for_s`; `until`: a sleep until a time, which can be any time away.
 */
function warnPastDeadline(c: StepCompileContext, i: number, seconds: number | null, until: boolean): void {
  const deadline = c.deadline;
  if (deadline === null) return;
  const label = c.label(i);
  const raise = "raise `model_policy.timeout_s` (at most 86400) or wait less";
  if (seconds !== null && seconds > deadline.s) {
    c.warn(
      stepPath(i, "wait"),
      `${label} can wait ${seconds} s, longer than the run's deadline (\`model_policy.timeout_s\` = ${deadline.s}): the run ends \`timeout\` first; ${raise}`,
    );
  } else if (until && !deadline.set) {
    c.warn(
      stepPath(i, "wait", "until"),
      `${label} sleeps until a time that can be later than the run's deadline (the default 300 s: \`model_policy.timeout_s\` is not set): the run would end \`timeout\` first; ${raise}`,
    );
  }
}
