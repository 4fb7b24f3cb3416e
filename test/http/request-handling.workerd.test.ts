/**
 * docs/http-api.md, docs/triggers.md at the points no other suite pins: a run that ends
 * failed or canceled while the invoke waits, media types compared case-insensitively, a
 * streamed body over 1 MiB, and the event stream behind the workflow's credentials.
 */

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { poll } from "../support/poll.ts";
import { call, type Envelope, invoke, TOKEN } from "../worker/harness.ts";

/** The run id an invoke of `workflow` with this Idempotency-Key gets (src/http/start-run.ts). */
function runIdFor(workflow: string, key: string): string {
  return env.RUNS.idFromName(`${workflow}\n${key}`).toString();
}

/** Cancels `runId` as soon as it exists (the invoke that creates it is still waiting). */
function cancelWhenStarted(runId: string): Promise<Response> {
  return poll(
    `run ${runId} to exist, to cancel it`,
    async () => {
      const res = await call(`/runs/${runId}/cancel`, { method: "POST" });
      if (res.status === 404) await res.arrayBuffer();
      return res;
    },
    (res) => res.status !== 404,
    { timeoutMs: 10_000, intervalMs: 25 },
  );
}

describe("Prefer: wait and a run that does not complete", () => {
  it("answers 200 with the failed envelope and Preference-Applied", async () => {
    const res = await invoke("fail-fast", {}, { wait: 20 });
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBe("wait=20");
    const envelope = (await res.json()) as Envelope;
    expect(envelope.status).toBe("failed");
    expect(envelope.error.code).toBe("webhook_failed");
    expect(res.headers.get("location")).toBe(`/runs/${envelope.run_id}`);
  });

  it("answers 200 with the canceled envelope when the run is canceled during the wait", async () => {
    const key = crypto.randomUUID();
    const runId = runIdFor("listing-slow", key);
    const pending = invoke("listing-slow", { ms: 5000 }, { wait: 20, headers: { "idempotency-key": key } });
    const cancel = await cancelWhenStarted(runId);
    expect(cancel.status).toBe(202);
    expect(((await cancel.json()) as Envelope).status).toBe("canceled");
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBe("wait=20");
    const envelope = (await res.json()) as Envelope;
    expect(envelope).toMatchObject({ run_id: runId, status: "canceled", error: { code: "canceled" } });
  });

  it("with invoke.response, answers a run canceled during the wait with 500 run_failed", async () => {
    const key = crypto.randomUUID();
    const runId = runIdFor("slow-response", key);
    const pending = invoke("slow-response", { ms: 5000 }, { headers: { "idempotency-key": key } });
    expect((await cancelWhenStarted(runId)).status).toBe(202);
    const res = await pending;
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.headers.get("location")).toBe(`/runs/${runId}`);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: 500,
      code: "run_failed",
      run_id: runId,
      error: { code: "canceled" },
    });
  });

  it("with invoke.response, answers a run that completes in time with the rendered body", async () => {
    const res = await invoke("slow-response", { ms: 10 });
    expect(res.status).toBe(200);
    expect(res.headers.get("location")).toMatch(/^\/runs\/[0-9a-f]{64}$/);
    expect(await res.json()).toEqual({ slept: 10 });
  });
});

describe("media types", () => {
  it("are compared case-insensitively, parameters ignored (RFC 9110 §8.3.1)", async () => {
    const json = await call("/invoke/basic", {
      method: "POST",
      headers: { "content-type": "Application/JSON; Charset=UTF-8", prefer: "wait=10" },
      body: JSON.stringify({ items: [{ name: "a", price: 1 }] }),
    });
    expect(json.status).toBe(200);
    expect(((await json.json()) as Envelope).params).toEqual({ items: [{ name: "a", price: 1 }] });
    const form = await call("/invoke/trig-form", {
      method: "POST",
      headers: { "content-type": "Application/X-WWW-Form-Urlencoded; charset=UTF-8", prefer: "wait=10" },
      body: "a=1&b=two",
    });
    expect(form.status).toBe(200);
    expect(((await form.json()) as Envelope).params).toEqual({ a: "1", b: "two" });
  });

  it("multipart/form-data is 415 unsupported_media_type (only JSON and urlencoded forms are read)", async () => {
    const data = new FormData();
    data.set("a", "1");
    const res = await call("/invoke/trig-form", { method: "POST", body: data });
    expect(res.status).toBe(415);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(((await res.json()) as { code: string }).code).toBe("unsupported_media_type");
  });
});

describe("body limit", () => {
  it("refuses a streamed body over 1 MiB without Content-Length with 413", async () => {
    const part = new TextEncoder().encode("a".repeat(600 * 1024));
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"x":"'));
        c.enqueue(part);
        c.enqueue(part);
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    const res = await call("/invoke/basic", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { code: string }).code).toBe("payload_too_large");
  });
});

describe("the event stream", () => {
  it("takes the workflow's credentials like every other read", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const created = await invoke("auth-bearer", {}, { headers: auth, wait: 10 });
    const { run_id } = (await created.json()) as { run_id: string };
    const refused = await call(`/runs/${run_id}/events`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(((await refused.json()) as { code: string }).code).toBe("unauthorized");
    const ok = await call(`/runs/${run_id}/events`, { headers: auth });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(await ok.text()).toContain("event: run.completed");
  });
});
