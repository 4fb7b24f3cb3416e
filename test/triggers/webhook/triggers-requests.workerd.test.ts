import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, type Envelope, invoke, TOKEN, waitForRun } from "../../worker/harness.ts";

const SECRETS = env as unknown as Record<string, string>;
const FORM = "application/x-www-form-urlencoded";

function post(name: string, body: string, contentType: string | null, headers: Record<string, string> = {}) {
  return call(`/invoke/${name}`, {
    method: "POST",
    headers: {
      ...(contentType === null ? {} : { "content-type": contentType }),
      prefer: "wait=10",
      ...headers,
    },
    body,
  });
}

describe("bodies", () => {
  it("turns a form into params of strings, a repeated key into an array in order", async () => {
    const res = await post("trig-form", "command=%2Fdeploy&text=api+now&channel=C1&tag=b&tag=a", FORM);
    expect(res.status).toBe(200);
    const envelope = (await res.json()) as Envelope;
    expect(envelope.params).toEqual({ command: "/deploy", text: "api now", channel: "C1", tag: ["b", "a"] });
  });

  it("unwraps a form whose only field is `payload` holding a JSON object (GitHub, Slack interactivity)", async () => {
    const payload = JSON.stringify({ type: "block_actions", user: { id: "U1" }, actions: [{ value: "ok" }] });
    const res = await post("trig-form", `payload=${encodeURIComponent(payload)}`, FORM);
    expect(((await res.json()) as Envelope).params).toEqual(JSON.parse(payload));
  });

  it("keeps `payload` as a string field when it is not a JSON object, or not alone", async () => {
    const a = await post("trig-form", "payload=hello", FORM);
    expect(((await a.json()) as Envelope).params).toEqual({ payload: "hello" });
    const b = await post("trig-form", `payload=${encodeURIComponent('{"a":1}')}&x=1`, FORM);
    expect(((await b.json()) as Envelope).params).toEqual({ payload: '{"a":1}', x: "1" });
  });

  it("keeps the nesting limit inside an unwrapped payload (400, not a deep run)", async () => {
    const deep = `${'{"a":'.repeat(200)}1${"}".repeat(200)}`;
    const res = await post("trig-form", `payload=${encodeURIComponent(deep)}`, FORM);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_json");
  });

  it("reads JSON sent with curl's default form content type (`curl -d '{...}'`)", async () => {
    const res = await post("trig-form", '{"name":"Ada"}', FORM);
    expect(((await res.json()) as Envelope).params).toEqual({ name: "Ada" });
  });

  // (A body without any content type is tested over real HTTP in test/e2e/triggers.e2e.test.ts:
  // in workerd a request built with a body always gets one.)
  it("reads JSON with a charset and as a +json type", async () => {
    for (const type of ["application/json; charset=utf-8", "application/vnd.api+json"]) {
      const res = await post("trig-form", '{"n":1}', type);
      expect(res.status, String(type)).toBe(200);
    }
  });

  it("answers any other content type with 415 unsupported_media_type and no run", async () => {
    for (const type of [
      "text/plain",
      "multipart/form-data; boundary=x",
      "application/xml",
      "application/octet-stream",
    ]) {
      const res = await post("trig-form", "a=1", type);
      expect(res.status, type).toBe(415);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = (await res.json()) as { code: string };
      expect(problem.code).toBe("unsupported_media_type");
    }
  });

  it("still refuses a form over 1 MiB with 413", async () => {
    const res = await post("trig-form", `a=${"x".repeat(1024 * 1024)}`, FORM);
    expect(res.status).toBe(413);
  });
});

describe("request headers", () => {
  it("records the declared headers in the envelope, lower-cased with `-` as `_`, missing ones null", async () => {
    const res = await invoke(
      "trig-headers",
      {},
      { headers: { "X-GitHub-Event": "push", "X-Other": "no" }, wait: 10 },
    );
    const envelope = (await res.json()) as Envelope;
    expect(envelope.request).toEqual({ headers: { x_github_event: "push", x_request_source: null } });
  });

  it("lets conditions, {{ }} and transform `from` read them", async () => {
    const push = (await (
      await invoke(
        "trig-headers",
        {},
        { headers: { "x-github-event": "push", "x-request-source": "ci" }, wait: 10 },
      )
    ).json()) as Envelope;
    const steps = Object.fromEntries(push.steps.map((s: Envelope) => [s.id, s]));
    expect(steps.push.status).toBe("complete");
    expect(steps.push.output).toEqual({ result: { x_github_event: "push", x_request_source: "ci" } });
    expect(steps.other.status).toBe("skipped");
    expect(steps.label.output).toEqual({ result: { text: "event push" } });

    const issue = (await (
      await invoke("trig-headers", {}, { headers: { "x-github-event": "issues" }, wait: 10 })
    ).json()) as Envelope;
    const s2 = Object.fromEntries(issue.steps.map((s: Envelope) => [s.id, s]));
    expect(s2.push.status).toBe("skipped");
    expect(s2.other.output).toEqual({ result: { event: "issues", source: null } });
  });

  it("shows `request: {headers: {}}` for a workflow that declares none", async () => {
    const res = await invoke("rel-open", {}, { wait: 10 });
    expect(((await res.json()) as Envelope).request).toEqual({ headers: {} });
  });
});

describe("invoke.response", () => {
  it("answers a completed run with the rendered body, status and content type, and a Location", async () => {
    const res = await invoke("trig-response", { name: "Ada" }, { headers: { "x-caller": "cli" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("location")).toMatch(/^\/runs\/[0-9a-f]{64}$/);
    expect(await res.json()).toEqual({ greeting: "Hello, Ada", echo: "Ada", caller: "cli" });
  });

  it("renders the same answer under Prefer: wait=N (only the wait changes)", async () => {
    const res = await invoke("trig-response", { name: "Lin" }, { wait: 20 });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { greeting: string }).greeting).toBe("Hello, Lin");
  });

  it("answers a failed run with 500 run_failed, its run_id and error", async () => {
    const res = await invoke("trig-response", { name: "Ada", fail: true });
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const problem = (await res.json()) as {
      code: string;
      run_id: string;
      error: { code: string; step: string };
    };
    expect(problem.code).toBe("run_failed");
    expect(problem.run_id).toMatch(/^[0-9a-f]{64}$/);
    expect(problem.error).toMatchObject({ code: "webhook_failed", step: "maybe-fail" });
    expect(res.headers.get("location")).toBe(`/runs/${problem.run_id}`);
  });

  it("answers text/plain with the rendered string", async () => {
    const res = await invoke("trig-response-text", {});
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await res.text()).toBe("done after 0 ms");
  });

  it("answers 202 at once under Prefer: wait=0 (the request's wait replaces wait_s)", async () => {
    // wait_s is 1 s: without the request's wait=0 this 600 ms run would answer 200 with its text.
    const res = await invoke("trig-response-text", { slow_ms: 600 }, { wait: 0 });
    const answered = Date.now();
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    // Answered while the run was still going (its step's own record): nothing waited for it.
    const done = await waitForRun(run_id);
    expect(done.status).toBe("complete");
    expect(answered).toBeLessThan(Date.parse(done.steps[0].finished_at));
  });

  it("answers 202 as usual when the run does not finish within wait_s", async () => {
    const res = await invoke("trig-response-text", { slow_ms: 3000 });
    const answered = Date.now();
    expect(res.status).toBe(202);
    const { run_id } = (await res.json()) as { run_id: string };
    const done = await waitForRun(run_id);
    expect(done.status).toBe("complete");
    // It waited wait_s (1 s) from the run's creation, then answered before the run ended.
    expect(answered - Date.parse(done.created_at)).toBeGreaterThanOrEqual(1000);
    expect(answered).toBeLessThan(Date.parse(done.steps[0].finished_at));
  });
});

describe("rate limits", () => {
  it("answers 429 rate_limited with Retry-After once a key is over its limit, per key, without a run", async () => {
    const tenant = crypto.randomUUID();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await invoke("trig-rate-limit", { n: i }, { headers: { "x-tenant": tenant } });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.headers.get("retry-after")).toBe("60");
        expect(res.headers.get("location")).toBeNull();
        expect(((await res.json()) as { code: string }).code).toBe("rate_limited");
      }
    }
    expect(statuses).toEqual([202, 202, 202, 429]);
    // Another tenant has its own bucket.
    const other = await invoke("trig-rate-limit", {}, { headers: { "x-tenant": crypto.randomUUID() } });
    expect(other.status).toBe(202);
  });

  it("answers a replayed Idempotency-Key from its run even over the limit; a new key is still refused", async () => {
    const tenant = crypto.randomUUID();
    const headers = (key: string) => ({ "x-tenant": tenant, "idempotency-key": key });
    const first = await invoke("trig-rate-limit", { n: 1 }, { headers: headers("k1") });
    expect(first.status).toBe(202);
    const { run_id } = (await first.json()) as { run_id: string };
    for (const k of ["k2", "k3"])
      expect((await invoke("trig-rate-limit", { n: 1 }, { headers: headers(k) })).status).toBe(202);
    // The bucket is spent (3 a minute): a fourth new run is refused, without a run.
    const refused = await invoke("trig-rate-limit", { n: 1 }, { headers: headers("k4") });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    // A replay is not a new run: it reaches its run, however often, and never gets 429.
    for (let i = 0; i < 3; i++) {
      const replay = await invoke("trig-rate-limit", { n: 1 }, { headers: headers("k1") });
      expect(replay.status).toBe(202);
      expect(((await replay.json()) as { run_id: string }).run_id).toBe(run_id);
    }
    // The refused key made no run: it is still refused, not found as a run.
    expect((await invoke("trig-rate-limit", { n: 1 }, { headers: headers("k4") })).status).toBe(429);
  });

  it("checks after auth and params: a refused or invalid invoke does not count", async () => {
    // The default key is the workflow name: one bucket for this workflow, 3 a minute.
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (let i = 0; i < 5; i++) {
      expect((await invoke("trig-rate-limit-default", { n: i })).status).toBe(401);
      expect((await invoke("trig-rate-limit-default", { n: "x" }, { headers: auth })).status).toBe(422);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await invoke("trig-rate-limit-default", { n: i }, { headers: auth })).status);
    expect(statuses).toEqual([202, 202, 202, 429]);
  });
});

describe("ADMIN_TOKEN", () => {
  it("reads the runs of any protected workflow with Authorization: Bearer <ADMIN_TOKEN>", async () => {
    const res = await invoke("auth-raw", {}, { headers: { "x-api-key": TOKEN }, wait: 10 });
    const { run_id } = (await res.json()) as { run_id: string };
    const admin = { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}` };
    expect((await call(`/runs/${run_id}`, { headers: admin })).status).toBe(200);
    expect((await call(`/runs/${run_id}/graph`, { headers: admin })).status).toBe(200);
    expect((await call("/runs?workflow=auth-raw", { headers: admin })).status).toBe(200);
    // It is not an invoke credential.
    expect((await invoke("auth-bearer", {}, { headers: admin })).status).toBe(401);
    // And a near miss is refused like any wrong credential.
    const near = { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}x` };
    expect((await call(`/runs/${run_id}`, { headers: near })).status).toBe(401);
  });
});
