/** Invoke authentication and the credentials that guard a run's envelope. */
import { describe, expect, it } from "vitest";
import { call, invoke, TOKEN } from "../../worker/harness.ts";

async function bodyText(res: Response) {
  const text = await res.text();
  expect(text).not.toContain(TOKEN);
  return JSON.parse(text) as Record<string, unknown>;
}

describe("bearer auth", () => {
  it("lets the right token in", async () => {
    const res = await invoke("auth-bearer", {}, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(202);
  });

  it("accepts the scheme in any case", async () => {
    const res = await invoke("auth-bearer", {}, { headers: { authorization: `bEaReR ${TOKEN}` } });
    expect(res.status).toBe(202);
  });

  it("gives the same 401 with WWW-Authenticate for a missing and a wrong token", async () => {
    const missing = await invoke("auth-bearer", {});
    const wrong = await invoke("auth-bearer", {}, { headers: { authorization: `Bearer ${TOKEN}x` } });
    const raw = await invoke("auth-bearer", {}, { headers: { authorization: TOKEN } });
    for (const res of [missing, wrong, raw]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
    const [a, b] = [await bodyText(missing), await bodyText(wrong)];
    expect(a).toEqual(b);
    expect(a.code).toBe("unauthorized");
  });

  it("checks credentials before reading the body", async () => {
    const res = await invoke("auth-bearer", "{not json");
    expect(res.status).toBe(401);
  });
});

describe("raw auth", () => {
  it("reads the configured header and compares it exactly", async () => {
    const ok = await invoke("auth-raw", {}, { headers: { "x-api-key": TOKEN } });
    expect(ok.status).toBe(202);
    const bearer = await invoke("auth-raw", {}, { headers: { "x-api-key": `Bearer ${TOKEN}` } });
    expect(bearer.status).toBe(401);
    expect(bearer.headers.get("www-authenticate")).toBeNull();
    const otherHeader = await invoke("auth-raw", {}, { headers: { authorization: TOKEN } });
    expect(otherHeader.status).toBe(401);
  });
});

describe("unset secret", () => {
  it("fails closed with 500 server_misconfigured, even with a header", async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: "Bearer anything-at-all" },
      { authorization: "Bearer " },
    ];
    for (const headers of attempts) {
      const res = await invoke("auth-unset", {}, { headers });
      expect(res.status).toBe(500);
      const body = (await res.json()) as Record<string, unknown>;
      expect(body.code).toBe("server_misconfigured");
    }
  });
});

describe("run endpoints use the workflow's credentials", () => {
  it("guards GET, cancel and DELETE of a protected run", async () => {
    const res = await invoke("auth-bearer", {}, { headers: { authorization: `Bearer ${TOKEN}` }, wait: 10 });
    const { run_id } = (await res.json()) as { run_id: string };
    for (const [method, path] of [
      ["GET", `/runs/${run_id}`],
      ["GET", `/runs/${run_id}/envelope`],
      ["POST", `/runs/${run_id}/cancel`],
      ["DELETE", `/runs/${run_id}`],
    ] as const) {
      const denied = await call(path, { method });
      expect(denied.status, `${method} ${path}`).toBe(401);
    }
    const ok = await call(`/runs/${run_id}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    const envelope = await call(`/runs/${run_id}/envelope`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(await envelope.json()).toEqual(await ok.json());
  });

  it("answers 404 run_not_found for an unknown or malformed run id", async () => {
    for (const id of ["0".repeat(64), "not-a-run", "f".repeat(64)]) {
      const res = await call(`/runs/${id}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe("run_not_found");
    }
  });
});
