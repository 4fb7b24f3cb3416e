/**
 * Compiles how a workflow is triggered (docs/triggers.md): `invoke.headers` (the request headers
 * a run records, read as `request.headers.<key>`), `invoke.response` (the answer of a workflow
 * used as an API), `invoke.rate_limit` (a Rate Limiting binding of wrangler.toml) and
 * `invoke.concurrency`, and through its siblings `invoke.auth` (invoke-auth.ts), `schedule`
 * (invoke-schedule.ts) and `notify` (invoke-notify.ts). Everything a runtime check could get
 * wrong at the first request is decided here, with the line to fix.
 */
import type {
  CompiledA2a,
  CompiledAuth,
  CompiledCancelOn,
  CompiledChat,
  CompiledEmail,
  CompiledInvoke,
  CompiledMcp,
  CompiledNotify,
  CompiledRateLimit,
  CompiledResponse,
  CompiledSchedule,
  SignatureAuth,
  Template,
} from "../../bundle.ts";
import { hint } from "../../common/did-you-mean.ts";
import { isObject } from "../../common/guards.ts";
import { checkExpression, rootPaths } from "../expressions.ts";
import { compileTemplate } from "../templates.ts";
import { rateLimitBlock } from "../wrangler-config.ts";
import type { DataPath } from "../yaml-source.ts";
import { A2A_CONTEXT_KEY, A2A_CONTEXT_TEMPLATE, compileA2a } from "./a2a/invoke-a2a.ts";
import { compileChat } from "./chat/invoke-chat.ts";
import { compileSchedules } from "./cron/invoke-schedule.ts";
import { compileEmail } from "./email/invoke-email.ts";
import type { InvokeContext, TriggerTemplate } from "./invoke-context.ts";
import { compileCancelOn, compileFlowControl } from "./invoke-flow.ts";
import { compileNotify } from "./invoke-notify.ts";
import { compileSearch } from "./invoke-search.ts";
import { compileMcp } from "./mcp/invoke-mcp.ts";
import { compileQueue } from "./queue/invoke-queue.ts";
import { compileAuth, signatureHeaders } from "./webhook/invoke-auth.ts";

export interface CompiledTriggers {
  auth: CompiledAuth | null;
  invoke: CompiledInvoke;
  schedule: CompiledSchedule[];
  notify: CompiledNotify[];
  cancelOn: CompiledCancelOn[];
  /** `invoke.queue` (queue/invoke-queue.ts). */
  queue: string | null;
  /** `invoke.email` (email/invoke-email.ts). */
  email: CompiledEmail | null;
  /** `invoke.chat` (chat/invoke-chat.ts). */
  chat: CompiledChat | null;
  /** `invoke.mcp` (mcp/invoke-mcp.ts). */
  mcp: CompiledMcp | null;
  /** `invoke.a2a` (a2a/invoke-a2a.ts). */
  a2a: CompiledA2a | null;
  /** `search:` (invoke-search.ts); empty: none. */
  search: Record<string, Template>;
  /** Checks a `request…` path read by an expression of this workflow, reported at `path`. */
  checkRequestRead(read: string[], path: DataPath, where: string): void;
}

/** Headers that carry credentials: never recorded in a run. */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"];

const DEFAULT_WAIT_S = 10;

type Obj = Record<string, unknown>;

/** `X-GitHub-Event` -> `x_github_event`: how expressions read a request header. */
export function headerKey(name: string): string {
  return name.toLowerCase().replace(/-/g, "_");
}

export function compileTriggers(d: Obj, ctx: InvokeContext): CompiledTriggers {
  const { file, sink } = ctx;
  const err = (path: DataPath, msg: string, part: "key" | "value" = "value") =>
    sink.error(file.display, file.at(path, part), msg);
  const invoke = isObject(d.invoke) ? d.invoke : {};

  const auth = compileAuth(invoke.auth, ctx, err);
  if (!isObject(invoke.auth) && ctx.invocable) {
    sink.warning(
      file.display,
      file.at(d.name !== undefined ? ["name"] : []),
      `workflow \`${ctx.name}\` has no \`invoke.auth\`: anyone who can reach the Worker can invoke it`,
    );
  }

  // ---- request headers -------------------------------------------------------------------
  const headers: CompiledInvoke["headers"] = [];
  const forbidden = new Map<string, string>(CREDENTIAL_HEADERS.map((h) => [h, "it carries credentials"]));
  if (auth && (auth.scheme === "raw" || auth.scheme === "bearer")) {
    forbidden.set(auth.header, "it is this workflow's `invoke.auth` header");
  } else if (auth) {
    const sig = auth as SignatureAuth;
    for (const h of signatureHeaders(sig)) {
      forbidden.set(h, `it is the \`${sig.scheme}\` signature header`);
    }
  }
  if (Array.isArray(invoke.headers)) {
    invoke.headers.forEach((h, i) => {
      if (typeof h !== "string") return;
      const name = h.toLowerCase();
      const key = headerKey(h);
      const why = forbidden.get(name);
      if (why) {
        err(["invoke", "headers", i], `\`invoke.headers\` may not record \`${h}\`: ${why}`);
        return;
      }
      const twin = headers.find((x) => x.key === key);
      if (twin) {
        err(
          ["invoke", "headers", i],
          twin.name === name
            ? `header \`${h}\` is listed twice in \`invoke.headers\``
            : `headers \`${twin.name}\` and \`${h}\` would both be read as \`request.headers.${key}\``,
        );
        return;
      }
      headers.push({ name, key });
    });
  }
  const headerKeys = headers.map((h) => h.key);
  const queue = compileQueue(invoke, ctx, err);
  const email = compileEmail(invoke, ctx, err);
  const chat = compileChat(invoke, auth, ctx, err);
  const description = typeof d.description === "string" ? d.description : null;
  const mcp = compileMcp(invoke, auth, description, ctx, err);
  const a2a = compileA2a(invoke, auth, description, ctx, err);
  /**
   * What a run reads besides the headers: a queue message's (src/triggers/queue/queue.ts) and a
   * schedule entry's (`request.schedule`, src/triggers/cron/schedule.ts).
   */
  const requestFields = [
    ...(queue === null ? [] : ["queue", "message_id", "attempts"]),
    ...(Array.isArray(d.schedule) && d.schedule.length > 0 ? ["schedule"] : []),
  ];

  const checkRequestRead = (read: string[], path: DataPath, where: string) => {
    if (read[0] !== "request") return;
    if (ctx.subNote) {
      err(
        path,
        `${where}: \`request\` is not available here: ${ctx.subNote()}, and only root workflows see the request. Pass the value through \`input\``,
      );
      return;
    }
    if (read[1] === undefined || requestFields.includes(read[1])) return;
    if (read[1] !== "headers") {
      const fields = requestFields.map((f) => `, \`request.${f}\``).join("");
      const note = ["queue", "message_id", "attempts"].includes(read[1])
        ? " (a run started by a queue message has it: set `invoke.queue`)"
        : read[1] === "schedule"
          ? " (a run started by a `schedule` entry has it)"
          : "";
      err(
        path,
        `${where}: \`request.${read[1]}\` does not exist${note}; the request is read as \`request.headers.<name>\`${fields}`,
      );
      return;
    }
    const key = read[2];
    if (key === undefined || headerKeys.includes(key)) return;
    const declared = headerKeys.length
      ? `declared: ${headerKeys.map((k) => `\`${k}\``).join(", ")}`
      : "none is declared";
    err(
      path,
      `${where}: \`request.headers.${key}\` is not a declared header (${declared}${hint(key, headerKeys)}). List it in \`invoke.headers\`; names are read lower-cased with \`-\` as \`_\` (\`X-GitHub-Event\` is \`request.headers.x_github_event\`)`,
    );
  };

  /** Compiles a template whose expressions may read only `roots`; reports every other read. */
  const template: TriggerTemplate = (
    value: unknown,
    path: DataPath,
    where: string,
    roots: Array<"params" | "env" | "step" | "request">,
    /** A secret env var may be read (the value never reaches the caller), in a URL. */
    url = false,
  ): Template =>
    compileTemplate(value, path, {
      encodeAfterQuery: url,
      expr: (e, p) => {
        const c = checkExpression(e, ctx.stepIds);
        if (!c.ok) {
          err(p, `${where}: invalid JMESPath in \`{{ ${e} }}\`: ${c.error}`);
          return null;
        }
        for (const read of rootPaths(c.ast)) {
          const root = read[0] as string;
          if (root === "item" || root === "item_index") {
            err(
              p,
              `${where}: \`${root}\` is only defined in the substitutions of a step with \`for_each\` (agent \`params\`, workflow \`input\`, webhook \`url\`, \`headers\`, \`body\`)`,
            );
            continue;
          }
          if (!(roots as string[]).includes(root)) {
            if (["params", "env", "step", "request"].includes(root)) {
              err(p, `${where} may read only ${roots.map((r) => `\`${r}\``).join(" and ")}, not \`${root}\``);
            }
            continue;
          }
          if (root === "request") checkRequestRead(read, p, where);
          if (root === "env" && read[1] !== undefined) {
            ctx.useEnv(read[1], p);
            if (!url && ctx.declared.some((x) => x.name === read[1] && x.secret)) {
              err(
                p,
                `${where} reads secret \`env.${read[1]}\`: the response goes to the caller. Use an env var with \`secret: false\``,
              );
            }
          }
          if (root === "step" && read[1] !== undefined && !ctx.stepIds.has(read[1])) {
            err(
              p,
              `${where}: \`step.${read[1]}\` is not a step of this pipeline${hint(read[1], ctx.stepIds)}`,
            );
          }
        }
        return c.text;
      },
      malformed: (msg, p) => err(p, `${where}: ${msg}`),
    });

  // ---- response ----------------------------------------------------------------------------
  let response: CompiledResponse | null = null;
  if (isObject(invoke.response)) {
    const r = invoke.response;
    const at = (k: string): DataPath => ["invoke", "response", k];
    const status = typeof r.status === "number" ? r.status : 200;
    const contentType =
      r.content_type === "text/plain" || r.content_type === "text/xml" ? r.content_type : "application/json";
    if (r.body !== undefined && [204, 205, 304].includes(status)) {
      err(at("body"), `\`invoke.response\` with status ${status} cannot have a body`, "key");
    }
    if (contentType !== "application/json" && r.body !== undefined && typeof r.body !== "string") {
      err(at("body"), `\`invoke.response.body\` must be a string for content type \`${contentType}\``);
    }
    response = {
      waitS: typeof r.wait_s === "number" ? r.wait_s : DEFAULT_WAIT_S,
      status,
      contentType,
      body:
        r.body === undefined
          ? { t: "lit", v: null }
          : template(r.body, at("body"), "`invoke.response.body`", ["params", "env", "step", "request"]),
    };
  }

  /** `invoke.rate_limit.key`: a template over `params` and `request` (what an invoke brings). */
  const invokeKey = (value: unknown, field: "rate_limit"): Template | null =>
    typeof value === "string"
      ? template(value, ["invoke", field, "key"], `\`invoke.${field}.key\``, ["params", "request"])
      : null;

  // ---- rate limit --------------------------------------------------------------------------
  let rateLimit: CompiledRateLimit | null = null;
  if (isObject(invoke.rate_limit) && typeof invoke.rate_limit.binding === "string") {
    const rl = invoke.rate_limit;
    const binding = rl.binding as string;
    const facts = ctx.wrangler();
    const found = facts.ratelimits.get(binding);
    if (!found) {
      err(
        ["invoke", "rate_limit", "binding"],
        facts.found
          ? `rate limit binding \`${binding}\` is not declared in ${facts.display}${hint(binding, facts.ratelimits.keys())}; add:\n${rateLimitBlock(binding)}`
          : `rate limit binding \`${binding}\` needs ${facts.display}, which does not exist; declare it there:\n${rateLimitBlock(binding)}`,
      );
    }
    rateLimit = {
      binding,
      key: invokeKey(rl.key, "rate_limit"),
      periodS: found?.periodS ?? 60,
    };
  }

  const flow = compileFlowControl(invoke, err, template);
  const cancelOn = compileCancelOn(d, ctx, err, template);
  const schedule = compileSchedules(d, ctx, err);
  const notify = compileNotify(d, ctx, err, template);
  const search = compileSearch(d, ctx, err, template);
  // An A2A agent's tasks are listed by their context (ListTasks filters on it).
  if (a2a) search[A2A_CONTEXT_KEY] = A2A_CONTEXT_TEMPLATE;

  return {
    auth,
    invoke: { headers, response, rateLimit, ...flow },
    schedule,
    notify,
    cancelOn,
    queue,
    email,
    chat,
    mcp,
    a2a,
    search,
    checkRequestRead,
  };
}
