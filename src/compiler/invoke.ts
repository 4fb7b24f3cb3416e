/**
 * Compiles how a workflow is triggered (SPEC section 5): `invoke.auth` (credential headers and
 * the senders' signature schemes, each with the fields it needs and no others), `invoke.headers`
 * (the request headers a run records, read as `request.headers.<key>`), `invoke.response` (the
 * answer of a workflow used as an API), `invoke.rate_limit` (a Rate Limiting binding of
 * wrangler.toml) and `schedule` (crons of wrangler.toml). Everything a runtime check could get
 * wrong at the first request is decided here, with the line to fix.
 */
import {
  type CompiledAuth,
  type CompiledInvoke,
  type CompiledNotify,
  type CompiledRateLimit,
  type CompiledResponse,
  type CompiledSchedule,
  type EnvDecl,
  type JsonObject,
  type JsonSchema,
  SIGNATURE_SCHEMES,
  type SignatureAuth,
  type SignatureScheme,
  type Template,
} from "../bundle.ts";
import { isObject } from "../common/guards.ts";
import { describeViolations, validateJson } from "../engine/schema.ts";
import { cronProblem } from "./cron.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { hint } from "./did-you-mean.ts";
import { envRefName, envShorthandName, envShorthandWarning } from "./env-refs.ts";
import { checkExpression, rootPaths } from "./expressions.ts";
import { compileTemplate } from "./templates.ts";
import { cronsLine, rateLimitBlock, type WranglerFacts } from "./wrangler-config.ts";
import type { DataPath, SourceFile } from "./yaml-source.ts";

export interface InvokeContext {
  file: SourceFile;
  sink: DiagnosticSink;
  name: string;
  /** Invocable (`workflows/*.workflow.yaml`). */
  invocable: boolean;
  /** Set when the file is used as a sub-workflow: says by whom. */
  subNote: (() => string) | null;
  /** Env declared by the file (empty for sub-workflows). */
  declared: EnvDecl[];
  /** Checks a read of env var `name` at `path` (declared, root only). */
  useEnv(name: string, path: DataPath): void;
  stepIds: Set<string>;
  paramsSchema: JsonSchema;
  wrangler: () => WranglerFacts;
}

export interface CompiledTriggers {
  auth: CompiledAuth | null;
  invoke: CompiledInvoke;
  schedule: CompiledSchedule[];
  notify: CompiledNotify[];
  /** Checks a `request…` path read by an expression of this workflow, reported at `path`. */
  checkRequestRead(read: string[], path: DataPath, where: string): void;
}

/** Headers that carry credentials: never recorded in a run. */
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"];

/** Each signature scheme's signature headers, and which optional fields it takes. */
const SCHEME_FIELDS: Record<SignatureScheme, { signatureHeaders: string[]; fields: string[] }> = {
  hmac: { signatureHeaders: [], fields: ["header", "prefix", "algorithm", "encoding"] },
  github: { signatureHeaders: ["x-hub-signature-256", "x-hub-signature"], fields: [] },
  stripe: { signatureHeaders: ["stripe-signature"], fields: ["tolerance_s"] },
  slack: { signatureHeaders: ["x-slack-signature"], fields: ["tolerance_s"] },
  "standard-webhooks": { signatureHeaders: ["webhook-signature"], fields: ["tolerance_s"] },
  shopify: { signatureHeaders: ["x-shopify-hmac-sha256"], fields: [] },
  linear: { signatureHeaders: ["linear-signature"], fields: ["tolerance_s"] },
  twilio: { signatureHeaders: ["x-twilio-signature"], fields: ["url"] },
  discord: { signatureHeaders: ["x-signature-ed25519"], fields: ["tolerance_s", "public_key"] },
};
const OPTIONAL_FIELDS = ["header", "prefix", "algorithm", "encoding", "tolerance_s", "url", "public_key"];
const DEFAULT_TOLERANCE_S = 300;
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
    for (const h of [...SCHEME_FIELDS[sig.scheme].signatureHeaders, ...(sig.hmac ? [sig.hmac.header] : [])]) {
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

  const checkRequestRead = (read: string[], path: DataPath, where: string) => {
    if (read[0] !== "request") return;
    if (ctx.subNote) {
      err(
        path,
        `${where}: \`request\` is not available here: ${ctx.subNote()}, and only root workflows see the request. Pass the value through \`input\``,
      );
      return;
    }
    if (read[1] === undefined) return;
    if (read[1] !== "headers") {
      err(
        path,
        `${where}: \`request.${read[1]}\` does not exist; the request is read as \`request.headers.<name>\``,
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
  const template = (
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

  /** `invoke.<field>.key`: a template over `params` and `request` (what an invoke brings). */
  const invokeKey = (value: unknown, field: "rate_limit" | "concurrency"): Template | null =>
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

  // ---- concurrency (SPEC 13) ---------------------------------------------------------------
  let concurrency: CompiledInvoke["concurrency"] = null;
  if (isObject(invoke.concurrency) && typeof invoke.concurrency.limit === "number") {
    const cc = invoke.concurrency;
    concurrency = {
      limit: cc.limit as number,
      key: invokeKey(cc.key, "concurrency"),
    };
  }

  // ---- schedule ----------------------------------------------------------------------------
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

  // ---- notify (SPEC 12) ----------------------------------------------------------------------
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
            ["complete", "failed", "canceled"].includes(x),
          )
        : ["failed" as const];
      notify.push({ url, on, sign });
    });
  }

  return {
    auth,
    invoke: { headers, response, rateLimit, ...(concurrency ? { concurrency } : {}) },
    schedule,
    notify,
    checkRequestRead,
  };
}

function compileAuth(
  raw: unknown,
  ctx: InvokeContext,
  err: (path: DataPath, msg: string, part?: "key" | "value") => void,
): CompiledAuth | null {
  if (!isObject(raw)) return null;
  const at = (k: string): DataPath => ["invoke", "auth", k];
  const header = typeof raw.header === "string" ? raw.header.toLowerCase() : null;
  const scheme =
    typeof raw.scheme === "string"
      ? raw.scheme
      : header === null || header === "authorization"
        ? "bearer"
        : "raw";
  const isSignature = (SIGNATURE_SCHEMES as readonly string[]).includes(scheme);
  if (!isSignature && scheme !== "raw" && scheme !== "bearer") return null; // the format check reported it

  // Secrets: one reference or a list.
  const secretEnvs: string[] = [];
  const refs: Array<[unknown, DataPath]> = Array.isArray(raw.secret)
    ? raw.secret.map((s, i) => [s, ["invoke", "auth", "secret", i]])
    : raw.secret !== undefined
      ? [[raw.secret, at("secret")]]
      : [];
  for (const [v, p] of refs) {
    const n = envRefName(v);
    if (n === null) continue; // the format check reported the shape
    ctx.useEnv(n, p);
    if (envShorthandName(v) !== null && ctx.declared.some((e) => e.name === n)) {
      ctx.sink.warning(ctx.file.display, ctx.file.at(p), envShorthandWarning(n));
    }
    if (secretEnvs.includes(n)) err(p, `\`env.${n}\` is listed twice in \`invoke.auth.secret\``);
    else secretEnvs.push(n);
  }

  // Fields that belong to another scheme.
  const allowed = isSignature ? SCHEME_FIELDS[scheme as SignatureScheme].fields : ["header"];
  for (const f of OPTIONAL_FIELDS) {
    if (raw[f] === undefined || allowed.includes(f)) continue;
    const owners = [
      ...(f === "header" ? ["raw", "bearer"] : []),
      ...SIGNATURE_SCHEMES.filter((s) => SCHEME_FIELDS[s].fields.includes(f)),
    ];
    err(
      at(f),
      `\`invoke.auth.${f}\` does not apply to scheme \`${scheme}\` (only to ${owners.map((o) => `\`${o}\``).join(", ")})`,
      "key",
    );
  }

  if (scheme === "discord") {
    if (raw.secret !== undefined) {
      err(
        at("secret"),
        "scheme `discord` verifies with the application's public key, not a shared secret; did you mean `public_key`?",
        "key",
      );
    }
    let publicKey: SignatureAuth["publicKey"] = null;
    if (typeof raw.public_key === "string") {
      const env = envRefName(raw.public_key);
      if (env !== null) {
        ctx.useEnv(env, at("public_key"));
        publicKey = { env };
      } else if (/^[0-9a-fA-F]{64}$/.test(raw.public_key.trim())) {
        publicKey = { hex: raw.public_key.trim().toLowerCase() };
      } else {
        err(
          at("public_key"),
          "`invoke.auth.public_key` must be the application's public key as 64 hex digits, or `{{ env.NAME }}`",
        );
      }
    } else if (raw.public_key === undefined) {
      err(
        ["invoke", "auth"],
        "scheme `discord` needs `public_key` (the application's public key, hex)",
        "key",
      );
    }
    return signature("discord", [], raw, { publicKey });
  }

  if (raw.secret === undefined) {
    const wrong = raw.public_key !== undefined ? "; `public_key` is for scheme `discord`" : "";
    err(
      ["invoke", "auth"],
      `scheme \`${scheme}\` needs \`secret\` (\`{{ env.NAME }}\`, or a list of them)${wrong}`,
      "key",
    );
  }
  if (!isSignature) {
    if (secretEnvs.length === 0) return null;
    return { scheme: scheme as "raw" | "bearer", header: header ?? "authorization", secretEnvs };
  }
  if (scheme === "hmac") {
    if (header === null) {
      err(
        ["invoke", "auth"],
        "scheme `hmac` needs `header`: the request header that carries the signature",
        "key",
      );
    }
    return signature("hmac", secretEnvs, raw, {
      hmac: {
        header: header ?? "",
        prefix: typeof raw.prefix === "string" ? raw.prefix : "",
        algorithm: raw.algorithm === "sha1" || raw.algorithm === "sha512" ? raw.algorithm : "sha256",
        encoding: raw.encoding === "base64" ? "base64" : "hex",
      },
    });
  }
  return signature(scheme as SignatureScheme, secretEnvs, raw, {
    url: scheme === "twilio" && typeof raw.url === "string" ? raw.url : null,
  });
}

function signature(
  scheme: SignatureScheme,
  secretEnvs: string[],
  raw: Obj,
  rest: Partial<SignatureAuth>,
): SignatureAuth {
  return {
    scheme,
    secretEnvs,
    toleranceS: typeof raw.tolerance_s === "number" ? raw.tolerance_s : DEFAULT_TOLERANCE_S,
    hmac: null,
    url: null,
    publicKey: null,
    ...rest,
  };
}
