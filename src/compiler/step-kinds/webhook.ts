/**
 * The `webhook` step kind: url (values after the first `?` percent-encoded), method, headers
 * (names checked), body, timeout, Standard Webhooks `sign`, and the rule that keeps a secret
 * away from a host the caller picks.
 */
import type { HttpMethod } from "../../bundle.ts";
import { isObject } from "../../common/guards.ts";
import { callerHost, secretReads } from "../caller-host.ts";
import { envRefName, envShorthandName, envShorthandWarning } from "../env-refs.ts";
import type { StepKindCompiler } from "./step-base.ts";
import { stepPath } from "./step-base.ts";

/** An HTTP field name: an RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const webhookStep: StepKindCompiler<"webhook"> = {
  compile(i, s, base, c) {
    const at = (...rest: Array<string | number>) => stepPath(i, ...rest);
    const label = c.label(i);
    const w = isObject(s.webhook) ? s.webhook : {};
    const url = c.template(i, typeof w.url === "string" ? w.url : "", at("webhook", "url"), true);
    if (url.t === "lit" && typeof url.v === "string" && url.v !== "" && !/^https?:\/\//i.test(url.v.trim())) {
      // Accepted (ktsu files compile unchanged), but every run of the step would fail.
      const param = /^params?:([A-Za-z_][A-Za-z0-9_]*)$/.exec(url.v.trim())?.[1];
      c.warn(
        at("webhook", "url"),
        `${label}: the url \`${url.v}\` is not an http(s) URL, so the step fails whenever it runs${
          param ? `; ktsu's \`param:NAME\` is not read here: write \`{{ params.${param} }}\`` : ""
        }`,
      );
    }
    const headers = w.headers === undefined ? null : c.template(i, w.headers, at("webhook", "headers"));
    if (isObject(w.headers)) {
      // Every request of the step would fail on such a name (fetch refuses it).
      for (const name of Object.keys(w.headers)) {
        if (HEADER_NAME.test(name)) continue;
        c.err(
          at("webhook", "headers", name),
          `${label}: header name \`${name}\` is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_\`|~; names are not substituted)`,
          "key",
        );
      }
    }
    const body = w.body === undefined ? null : c.template(i, w.body, at("webhook", "body"));
    let sign: { secretEnv: string } | null = null;
    if (isObject(w.sign)) {
      const n = envRefName(w.sign.secret);
      if (n !== null && envShorthandName(w.sign.secret) !== null && c.isDeclared(n)) {
        c.warn(at("webhook", "sign", "secret"), envShorthandWarning(n));
      }
      if (n !== null) {
        c.useEnv(n, at("webhook", "sign", "secret"));
        sign = { secretEnv: n };
      }
    }
    // A secret sent to a host the caller picks is a secret handed to the caller.
    const leaks: string[] = [];
    for (const [where, tpl] of [
      ["url", url],
      ["headers", headers],
      ["body", body],
    ] as const) {
      for (const n of secretReads(tpl, c.secretEnv)) leaks.push(`\`env.${n}\` in its ${where}`);
    }
    if (sign && c.secretEnv.has(sign.secretEnv)) leaks.push(`\`env.${sign.secretEnv}\` to sign it`);
    const from = isObject(s.for_each) ? s.for_each.from : undefined;
    const hostFrom = callerHost(
      url,
      typeof from === "string" ? from.replace(/^\s*\{\{|\}\}\s*$/g, "") : null,
    );
    if (leaks.length > 0 && hostFrom) {
      c.err(
        at("webhook", "url"),
        `${label} uses secret ${leaks.join(" and ")}, but its url host comes from ${hostFrom}: a caller could send the secret to any host. Take the host from a literal or an env var`,
      );
    }
    return {
      ...base,
      kind: "webhook",
      url,
      ...(secretReads(url, c.secretEnv).length > 0 ? { urlReadsSecret: true as const } : {}),
      method: (typeof w.method === "string" ? w.method : "POST") as HttpMethod,
      headers,
      body,
      timeoutS: typeof w.timeout_s === "number" ? w.timeout_s : 30,
      sign,
    };
  },
};
