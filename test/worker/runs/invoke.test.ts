/** POST /invoke/{name}: the order of checks, status codes, problem+json bodies, waiting. */
import { describe, expect, it } from "vitest";
import { call, invoke, run, TOKEN, waitForRun } from "../harness.ts";

const ITEMS = [
  { name: "pen", price: 2 },
  { name: "free", price: 0 },
  { name: "book", price: 12 },
];

async function problem(res: Response) {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status: res.status, type: expect.any(String), title: expect.any(String) });
  expect(typeof body.detail).toBe("string");
  return body;
}

describe("invoke", () => {
  it("answers 404 workflow_not_found for an unknown workflow", async () => {
    const res = await invoke("no-such-workflow");
    expect(res.status).toBe(404);
    expect((await problem(res)).code).toBe("workflow_not_found");
  });

  it("suggests the closest workflow name when the name is mistyped, and none when nothing is close", async () => {
    const typo = await problem(await invoke("basc"));
    expect(typo.detail).toBe('no workflow named "basc"; did you mean `basic`?');
    const far = await problem(await invoke("no-such-workflow"));
    expect(far.detail).toBe('no workflow named "no-such-workflow"');
  });

  it("creates a run: 202 with run_id, status accepted and Location", async () => {
    const res = await invoke("basic", { items: ITEMS });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { run_id: string; status: string };
    expect(body.status).toBe("accepted");
    expect(body.run_id).toMatch(/^[0-9a-f]{64}$/);
    expect(res.headers.get("location")).toBe(`/runs/${body.run_id}`);
    const env = await waitForRun(body.run_id);
    expect(env.status).toBe("complete");
  });

  it("returns the finished envelope with 200 and Preference-Applied under Prefer: wait", async () => {
    const res = await invoke("basic", { items: ITEMS }, { wait: 10 });
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBe("wait=10");
    const env = (await res.json()) as Record<string, unknown>;
    expect(env.status).toBe("complete");
    expect(res.headers.get("location")).toBe(`/runs/${env.run_id}`);
  });

  it("caps Prefer: wait above 60 at 60", async () => {
    const res = await invoke("basic", { items: ITEMS }, { wait: 600 });
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBe("wait=60");
  });

  it("accepts ?wait=N as well", async () => {
    const res = await call("/invoke/basic?wait=5", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ items: ITEMS }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("complete");
  });

  it("takes an empty body as {}", async () => {
    const res = await call("/invoke/auth-bearer?wait=5", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { params: unknown }).params).toEqual({});
  });

  it("answers 400 invalid_json for malformed JSON", async () => {
    const res = await invoke("basic", "{not json");
    expect(res.status).toBe(400);
    expect((await problem(res)).code).toBe("invalid_json");
  });

  it("says at which line and column malformed JSON breaks, without echoing the body", async () => {
    const cases: Array<[string, string]> = [
      ['{\n  "items": [],\n  "tier": gold\n}', "line 3, column 11"], // a value not quoted
      ['{"items": [1, 2,]}', "line 1, column 17"], // a trailing comma
      ['{"items": [], "tier": "gold"', "line 1, column 29"], // the body ends too early
      ['{"items": []}\n{"items": []}', "line 2, column 1"], // a second value after the first
      ["{\r\n  'items': []\r\n}", "line 2, column 3"], // single quotes
    ];
    for (const [body, where] of cases) {
      const res = await invoke("basic", body);
      expect(res.status).toBe(400);
      const p = await problem(res);
      expect(p.code).toBe("invalid_json");
      expect(p.detail).toBe(`the body is not valid JSON at ${where}`);
    }
  });

  it("answers 400 invalid_json for a body that is not an object", async () => {
    for (const body of ["[1,2]", "null", "42", '"text"']) {
      const res = await invoke("basic", body);
      expect(res.status).toBe(400);
      expect((await problem(res)).code).toBe("invalid_json");
    }
  });

  it("answers 413 payload_too_large over 1 MiB", async () => {
    const big = JSON.stringify({ items: [], pad: "x".repeat(1024 * 1024) });
    const res = await invoke("basic", big);
    expect(res.status).toBe(413);
    expect((await problem(res)).code).toBe("payload_too_large");
  });

  it("answers 422 invalid_params with JSON Pointer paths and creates no run", async () => {
    const res = await invoke("basic", { items: [1], tier: 5 });
    expect(res.status).toBe(422);
    const body = await problem(res);
    expect(body.code).toBe("invalid_params");
    const paths = (body.errors as Array<{ path: string; message: string }>).map((e) => e.path).sort();
    expect(paths).toEqual(["/items/0", "/tier"]);
    expect(res.headers.get("location")).toBeNull();
  });

  it("reports a missing required param at its parent's path", async () => {
    const res = await invoke("basic", {});
    expect(res.status).toBe(422);
    const body = await problem(res);
    expect(body.errors).toEqual([{ path: "", message: expect.stringContaining("items") }]);
  });

  it("answers 404 problem+json for unknown routes", async () => {
    const res = await call("/nope");
    expect(res.status).toBe(404);
    expect((await problem(res)).code).toBe("not_found");
  });

  it("serves GET /health", async () => {
    const res = await call("/health");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });
});

describe("Idempotency-Key", () => {
  it("gives the same run for the same key and an equal body", async () => {
    const key = crypto.randomUUID();
    const a = await invoke("basic", { items: ITEMS, tier: "vip" }, { headers: { "idempotency-key": key } });
    const b = await invoke(
      "basic",
      { tier: "vip", items: ITEMS },
      { headers: { "idempotency-key": key }, wait: 10 },
    );
    expect(a.status).toBe(202);
    expect(b.status).toBe(200);
    const first = (await a.json()) as { run_id: string };
    const second = (await b.json()) as { run_id: string };
    expect(second.run_id).toBe(first.run_id);
  });

  it("answers 409 idempotency_conflict for the same key with a different body", async () => {
    const key = crypto.randomUUID();
    await invoke("basic", { items: ITEMS }, { headers: { "idempotency-key": key } });
    const res = await invoke("basic", { items: [] }, { headers: { "idempotency-key": key } });
    expect(res.status).toBe(409);
    expect((await problem(res)).code).toBe("idempotency_conflict");
  });

  it("scopes keys per workflow", async () => {
    const key = crypto.randomUUID();
    const a = (await run("basic", { items: ITEMS }, { headers: { "idempotency-key": key } })) as {
      run_id: string;
    };
    const b = (await run(
      "auth-bearer",
      {},
      { headers: { "idempotency-key": key, authorization: `Bearer ${TOKEN}` } },
    )) as {
      run_id: string;
    };
    expect(a.run_id).not.toBe(b.run_id);
  });

  it("rejects a key over 255 characters", async () => {
    const res = await invoke("basic", { items: ITEMS }, { headers: { "idempotency-key": "k".repeat(256) } });
    expect(res.status).toBe(400);
    expect((await problem(res)).code).toBe("invalid_idempotency_key");
  });
});
