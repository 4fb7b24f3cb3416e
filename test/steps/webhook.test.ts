/**
 * The webhook step in workerd against the real Node target from test/global-setup.ts (see
 * test/servers/webhook-target.ts for its routes): what receivers get (method, headers, body,
 * idempotency key, signature), how failures and retries look to the workflow author, and what
 * the step records. Each test uses its own `key` so the target's log is its own.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Json, Template, WebhookStep } from "../../src/bundle.ts";
import { importSigningKey, signStandardWebhook } from "../../src/common/standard-webhooks.ts";
import { type Clock, systemClock } from "../../src/engine/clock.ts";
import { createMasker } from "../../src/engine/mask.ts";
import { emptyMetrics, type StepContext, StepError } from "../../src/engine/types.ts";
import { executeWebhook } from "../../src/steps/webhook.ts";
import { testBundle, testWorkflow } from "../support/compiled.ts";

const TARGET = (env as unknown as Record<string, string>).TARGET_URL as string;
const SIGNING_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET = "s3cr3t-webhook-value-123";

interface Logged {
  method: string;
  path: string;
  url: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: string;
  time: number;
}

const workflow = testWorkflow({ key: "w.workflow.yaml", name: "w" });
const bundle = testBundle([workflow]);

interface ContextOptions {
  params?: Json;
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
  deadline?: number;
  runId?: string;
  path?: string;
}

function context(opts: ContextOptions = {}): StepContext {
  return {
    bundle,
    runId: opts.runId ?? `run-${crypto.randomUUID()}`,
    path: opts.path ?? "notify",
    workflow,
    scope: { params: opts.params ?? {}, env: { TOKEN: SECRET }, step: {} },
    signal: opts.signal ?? new AbortController().signal,
    deadline: opts.deadline ?? Date.now() + 60_000,
    env: { ALLOW_PRIVATE_WEBHOOKS: "true", SIGNING_SECRET, ...opts.env },
    fetch: (input, init) => fetch(input, init),
    metrics: emptyMetrics(),
    budget: { capUsd: null, reserve: () => Promise.reject(new Error("webhooks reserve nothing")) },
    // As a run gives it: its masker knows the run's secrets.
    holdsSecret: (text) => masker.maskText(text) !== text,
  };
}

const masker = createMasker([SECRET]);

const lit = (v: Json): Template => ({ t: "lit", v });

function webhook(overrides: Partial<WebhookStep> & { url: Template }): WebhookStep {
  return {
    kind: "webhook",
    id: "notify",
    deps: [],
    ancestors: [],
    condition: null,
    method: "POST",
    headers: null,
    body: null,
    timeoutS: 30,
    sign: null,
    ...overrides,
  };
}

function key(name: string): string {
  return `${name}-${crypto.randomUUID()}`;
}

async function logOf(k: string): Promise<Logged[]> {
  const res = await fetch(`${TARGET}/log?key=${encodeURIComponent(k)}`);
  return (await res.json()) as Logged[];
}

async function failureOf(promise: Promise<unknown>): Promise<StepError> {
  const err = await promise.then(
    () => new Error("the step completed"),
    (e: unknown) => e,
  );
  if (!(err instanceof StepError)) throw err;
  return err;
}

describe("webhook step", () => {
  it("posts the rendered JSON body and records status, headers and parsed JSON body", async () => {
    const k = key("echo");
    const step = webhook({
      url: lit(`${TARGET}/echo?key=${k}`),
      body: {
        t: "obj",
        entries: [
          ["user", { t: "expr", e: "params.user" }],
          ["fixed", lit(1)],
        ],
      },
    });
    const out = (await executeWebhook(step, context({ params: { user: { name: "Ada" } } }))) as {
      status: number;
      headers: Record<string, string>;
      body: { method: string; body: Json; headers: Record<string, string> };
    };
    expect(out.status).toBe(200);
    expect(out.headers["content-type"]).toBe("application/json");
    expect(out.body.method).toBe("POST");
    expect(out.body.body).toEqual({ user: { name: "Ada" }, fixed: 1 });
    expect(out.body.headers["content-type"]).toBe("application/json");
  });

  it("sends substituted headers and percent-encodes values inserted into the query", async () => {
    const k = key("subst");
    const step = webhook({
      url: { t: "concat", parts: [`${TARGET}/echo?key=${k}&q=`, { e: "params.q", encode: true }] },
      headers: {
        t: "obj",
        entries: [
          ["Authorization", { t: "concat", parts: ["Bearer ", { e: "env.TOKEN" }] }],
          ["X-Count", { t: "expr", e: "params.n" }],
        ],
      },
    });
    await executeWebhook(step, context({ params: { q: "a&b=c d", n: 3 } }));
    const [req] = await logOf(k);
    expect(req?.query.q).toBe("a&b=c d");
    expect(req?.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(req?.headers["x-count"]).toBe("3");
  });

  it.each(["GET", "DELETE"] as const)("sends no body with %s", async (method) => {
    const k = key(method);
    const step = webhook({ url: lit(`${TARGET}/echo?key=${k}`), method, body: lit({ ignored: true }) });
    const out = (await executeWebhook(step, context())) as { body: { method: string } };
    expect(out.body.method).toBe(method);
    const [req] = await logOf(k);
    expect(req?.body).toBe("");
    expect(req?.headers["content-type"]).toBeUndefined();
  });

  it("completes after 503, 503, 200 with 3 attempts and one idempotency key", async () => {
    const k = key("flaky");
    const ctx = context({ runId: "run-flaky", path: "notify/post" });
    const out = (await executeWebhook(
      webhook({ url: lit(`${TARGET}/status/503,503,200?key=${k}`) }),
      ctx,
    )) as {
      status: number;
    };
    expect(out.status).toBe(200);
    expect(ctx.metrics.attempts).toBe(3);
    const log = await logOf(k);
    expect(log).toHaveLength(3);
    expect(new Set(log.map((r) => r.headers["idempotency-key"]))).toEqual(new Set(["run-flaky:notify/post"]));
  });

  it("fails at once on 400 with one attempt", async () => {
    const k = key("bad");
    const ctx = context();
    const err = await failureOf(executeWebhook(webhook({ url: lit(`${TARGET}/status/400?key=${k}`) }), ctx));
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toBe(`POST ${TARGET}/status/400 answered 400 after 1 attempt`);
    expect(ctx.metrics.attempts).toBe(1);
    expect(await logOf(k)).toHaveLength(1);
  });

  it("fails after 3 attempts of 503 without showing the URL's query or userinfo", async () => {
    const k = key("down");
    const url = new URL(`${TARGET}/status/503?key=${k}&token=query-token-77`);
    url.username = "user";
    url.password = "hunter22";
    const err = await failureOf(executeWebhook(webhook({ url: lit(url.href) }), context()));
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toBe(`POST ${TARGET}/status/503 answered 503 after 3 attempts`);
    expect(err.message).not.toContain("query-token-77");
    expect(err.message).not.toContain("hunter22");
  });

  it("fails with response_too_deep on a JSON answer nested deeper than an invoke body may be", async () => {
    const err = await failureOf(
      executeWebhook(webhook({ url: lit(`${TARGET}/deep/100000?key=${key("deep")}`) }), context()),
    );
    expect(err.code).toBe("response_too_deep");
    expect(err.message).toBe(
      `the JSON answer of POST ${TARGET}/deep/100000 nests objects and arrays deeper than 128 levels`,
    );
  });

  it("takes a JSON answer nested as deep as an invoke body may be", async () => {
    const out = (await executeWebhook(
      webhook({ url: lit(`${TARGET}/deep/128?key=${key("deep-ok")}`) }),
      context(),
    )) as {
      body: Json;
    };
    expect(JSON.stringify(out.body)).toBe(`${"[".repeat(128)}${"]".repeat(128)}`);
  });

  it("shows only the origin of a url that holds a secret, its path included", async () => {
    const k = key("secret-path");
    const url = `${TARGET}/status/404/${SECRET}?key=${k}`;
    const err = await failureOf(executeWebhook(webhook({ url: lit(url) }), context()));
    expect(err.message).toBe(`POST ${new URL(TARGET).origin}/… answered 404 after 1 attempt`);
  });

  it("waits for Retry-After before retrying a 429", async () => {
    const k = key("ratelimited");
    // The system clock, with every timer the step sets written down (the back-off among them).
    const timers: Array<{ ms: number; firedAt: number | null }> = [];
    const clock: Clock = {
      now: () => systemClock.now(),
      setTimer(fn, ms) {
        const t = { ms, firedAt: null as number | null };
        timers.push(t);
        return systemClock.setTimer(() => {
          t.firedAt = Date.now();
          fn();
        }, ms);
      },
    };
    const ctx = { ...context(), clock };
    const out = (await executeWebhook(webhook({ url: lit(`${TARGET}/retry-after/1?key=${k}`) }), ctx)) as {
      status: number;
    };
    expect(out.status).toBe(200);
    const [first, second] = await logOf(k);
    expect(ctx.metrics.attempts).toBe(2);
    // The wait between the attempts is the 1 s the server asked for, not the back-off's jitter.
    const waits = timers.filter((t) => t.ms < 30_000);
    expect(waits.map((t) => t.ms)).toEqual([1000]);
    expect(second?.time).toBeGreaterThanOrEqual(waits[0]?.firedAt as number);
    expect((second?.time ?? 0) - (first?.time ?? 0)).toBeGreaterThanOrEqual(1000);
  });

  it("aborts an attempt after timeout_s and fails after 3 timed-out attempts", async () => {
    const k = key("slow");
    const ctx = context();
    const err = await failureOf(
      executeWebhook(webhook({ url: lit(`${TARGET}/slow/5000?key=${k}`), timeoutS: 0.3 }), ctx),
    );
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toBe(`POST ${TARGET}/slow/5000 failed after 3 attempts: no response within 300 ms`);
    expect(ctx.metrics.attempts).toBe(3);
    expect(await logOf(k)).toHaveLength(3);
  });

  it("stops a hanging request when the run is aborted and rethrows the run's reason", async () => {
    const run = new AbortController();
    const reason = new StepError("canceled", "the run was canceled");
    setTimeout(() => run.abort(reason), 200);
    const ctx = context({ signal: run.signal });
    const err = await failureOf(
      executeWebhook(webhook({ url: lit(`${TARGET}/hang?key=${key("hang")}`) }), ctx),
    );
    expect(err).toBe(reason);
    expect(ctx.metrics.attempts).toBe(1);
  });

  it("retries a connection reset and fails with webhook_failed after 3 attempts", async () => {
    const k = key("reset");
    const err = await failureOf(executeWebhook(webhook({ url: lit(`${TARGET}/reset?key=${k}`) }), context()));
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toMatch(new RegExp(`^POST ${TARGET}/reset failed after 3 attempts: `));
    expect(await logOf(k)).toHaveLength(3);
  });

  it("refuses a loopback host without sending anything unless ALLOW_PRIVATE_WEBHOOKS is true", async () => {
    const k = key("private");
    const ctx = context({ env: { ALLOW_PRIVATE_WEBHOOKS: "false" } });
    const err = await failureOf(executeWebhook(webhook({ url: lit(`${TARGET}/echo?key=${k}`) }), ctx));
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toContain("ALLOW_PRIVATE_WEBHOOKS");
    expect(ctx.metrics.attempts).toBe(0);
    expect(await logOf(k)).toHaveLength(0);
  });

  it.each([
    ["localhost", "http://localhost:1/x"],
    ["a link-local address", "http://169.254.169.254/latest/meta-data"],
    ["an IPv6 loopback", "http://[::1]:1/"],
  ])("refuses %s when private webhooks are not allowed", async (_name, url) => {
    const ctx = context({ env: { ALLOW_PRIVATE_WEBHOOKS: "false" } });
    const err = await failureOf(executeWebhook(webhook({ url: lit(url) }), ctx));
    expect(err.code).toBe("webhook_failed");
  });

  it.each([
    ["not a URL", "not a url"],
    ["not http(s)", "ftp://example.com/file"],
    ["empty", ""],
  ])("fails with webhook_failed when the url is %s", async (_name, url) => {
    const ctx = context();
    const err = await failureOf(executeWebhook(webhook({ url: lit(url) }), ctx));
    expect(err.code).toBe("webhook_failed");
    expect(ctx.metrics.attempts).toBe(0);
  });

  it("does not follow a redirect and fails with the 3xx status", async () => {
    const k = key("redirect");
    const err = await failureOf(
      executeWebhook(webhook({ url: lit(`${TARGET}/redirect?key=${k}`) }), context()),
    );
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toContain("answered 302");
    const log = await logOf(k);
    expect(log.map((r) => r.path)).toEqual(["/redirect"]);
  });

  it("signs the request so a Standard Webhooks verifier accepts it", async () => {
    const k = key("signed");
    const url = `${TARGET}/verify-signature?key=${k}&whsec=${encodeURIComponent(SIGNING_SECRET)}`;
    const step = webhook({
      url: lit(url),
      body: lit({ event: "done" }),
      sign: { secretEnv: "SIGNING_SECRET" },
    });
    const out = (await executeWebhook(step, context())) as { status: number; body: Json };
    expect(out).toMatchObject({ status: 200, body: { verified: true } });
  });

  it("computes the signature of the Standard Webhooks reference example", async () => {
    // The test vector published with the Standard Webhooks specification and its libraries.
    const key = await importSigningKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    const signature = await signStandardWebhook(
      key,
      "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "1614265330",
      '{"test": 2432232314}',
    );
    expect(signature).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("fails with webhook_failed when the signing secret is not base64", async () => {
    const step = webhook({
      url: lit(`${TARGET}/echo?key=${key("badsecret")}`),
      sign: { secretEnv: "SIGNING_SECRET" },
    });
    const err = await failureOf(
      executeWebhook(step, context({ env: { SIGNING_SECRET: "whsec_!!not base64!!" } })),
    );
    expect(err.code).toBe("webhook_failed");
    expect(err.message).not.toContain("!!not base64!!");
  });

  it("is rejected by the verifier when signed with another secret", async () => {
    const url = `${TARGET}/verify-signature?key=${key("wrong")}&whsec=${encodeURIComponent(SIGNING_SECRET)}`;
    const step = webhook({
      url: lit(url),
      body: lit({ event: "done" }),
      sign: { secretEnv: "SIGNING_SECRET" },
    });
    const ctx = context({ env: { SIGNING_SECRET: "whsec_b3RoZXIta2V5LW90aGVyLWtleQ==" } });
    const err = await failureOf(executeWebhook(step, ctx));
    expect(err.message).toContain("answered 401");
  });

  it("keeps webhook-id and idempotency-key the same on every retry of a signed request", async () => {
    const k = key("signed-retry");
    const step = webhook({
      url: lit(`${TARGET}/status/503,200?key=${k}`),
      sign: { secretEnv: "SIGNING_SECRET" },
    });
    await executeWebhook(step, context({ runId: "run-42", path: "notify/post" }));
    const log = await logOf(k);
    expect(log).toHaveLength(2);
    expect(log.map((r) => r.headers["webhook-id"])).toEqual([
      "msg_run-42_notify_post",
      "msg_run-42_notify_post",
    ]);
    expect(log.map((r) => r.headers["idempotency-key"])).toEqual([
      "run-42:notify/post",
      "run-42:notify/post",
    ]);
    expect(log.every((r) => r.headers["webhook-signature"]?.startsWith("v1,"))).toBe(true);
  });

  it("fails with webhook_failed when the signing secret is not set", async () => {
    const step = webhook({
      url: lit(`${TARGET}/echo?key=${key("nosecret")}`),
      sign: { secretEnv: "MISSING" },
    });
    const err = await failureOf(executeWebhook(step, context()));
    expect(err.code).toBe("webhook_failed");
    expect(err.message).toContain("MISSING");
  });

  it("records the text of a JSON-typed body that does not parse", async () => {
    const out = (await executeWebhook(
      webhook({ url: lit(`${TARGET}/garbage?key=${key("garbage")}`) }),
      context(),
    )) as {
      status: number;
      body: Json;
    };
    expect(out.status).toBe(200);
    expect(out.body).toBe('{"this is": not json');
  });

  it("completes on 204 No Content with an empty body", async () => {
    const out = await executeWebhook(
      webhook({ url: lit(`${TARGET}/status/204?key=${key("nocontent")}`) }),
      context(),
    );
    expect(out).toMatchObject({ status: 204, body: "" });
  });

  it("records a non-JSON body as text", async () => {
    const out = (await executeWebhook(
      webhook({ url: lit(`${TARGET}/huge/10?key=${key("text")}`) }),
      context(),
    )) as {
      body: Json;
    };
    expect(out.body).toBe("aaaaaaaaaa");
  });

  it("accepts a response body of exactly 1 MiB", async () => {
    const url = lit(`${TARGET}/huge/${1024 * 1024}?key=${key("mib")}`);
    const out = (await executeWebhook(webhook({ url }), context())) as { body: string };
    expect(out.body.length).toBe(1024 * 1024);
  });

  it("fails with output_too_large when the response body is over 1 MiB", async () => {
    const url = lit(`${TARGET}/huge/${1024 * 1024 + 1}?key=${key("huge")}`);
    const err = await failureOf(executeWebhook(webhook({ url }), context()));
    expect(err.code).toBe("output_too_large");
  });

  it("returns a secret the target echoes as is, and the masker hides it in every form", async () => {
    const k = key("echo-secret");
    const step = webhook({
      url: { t: "concat", parts: [`${TARGET}/echo?key=${k}&token=`, { e: "env.TOKEN", encode: true }] },
      headers: {
        t: "obj",
        entries: [["Authorization", { t: "concat", parts: ["Bearer ", { e: "env.TOKEN" }] }]],
      },
      body: { t: "obj", entries: [["token", { t: "expr", e: "env.TOKEN" }]] },
    });
    const out = await executeWebhook(step, context());
    expect(JSON.stringify(out)).toContain(SECRET);

    const masked = JSON.stringify(createMasker([SECRET]).maskJson(out));
    expect(masked).not.toContain(SECRET);
    expect(masked).not.toContain(encodeURIComponent(SECRET));
    expect(masked).not.toContain(btoa(SECRET).replace(/=+$/, ""));
    expect(masked).toContain("Bearer ***");
  });
});
