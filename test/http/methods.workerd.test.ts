/**
 * docs/http-api.md: a route asked with a method it does not serve. HTTP
 * (RFC 9110 §15.5.6) answers 405 with `Allow`, not 404: the resource exists, the method is
 * wrong, and a client (or an API tool) learns from `Allow` what to send instead.
 */
import { describe, expect, it } from "vitest";
import { call } from "../worker/harness.ts";

const RUN = `/runs/${"a".repeat(64)}`;

async function problem(res: Response) {
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = (await res.json()) as { status: number; code: string; detail: string };
  expect(body.status).toBe(res.status);
  return body;
}

describe("a known path asked with another method", () => {
  const cases: [string, string, string][] = [
    ["GET", "/invoke/basic", "POST, OPTIONS"],
    ["PUT", "/invoke/basic", "POST, OPTIONS"],
    ["GET", "/invoke/no-such-workflow", "POST, OPTIONS"],
    ["POST", "/health", "GET, HEAD, OPTIONS"],
    ["POST", "/runs?workflow=basic", "GET, HEAD, OPTIONS"],
    ["PATCH", RUN, "GET, HEAD, DELETE, OPTIONS"],
    ["POST", RUN, "GET, HEAD, DELETE, OPTIONS"],
    ["GET", `${RUN}/cancel`, "POST, OPTIONS"],
    ["DELETE", `${RUN}/events`, "GET, HEAD, OPTIONS"],
    ["POST", `${RUN}/envelope`, "GET, HEAD, OPTIONS"],
    ["PUT", `${RUN}/approvals`, "GET, HEAD, OPTIONS"],
    ["GET", `${RUN}/approvals/some-id`, "POST, OPTIONS"],
    ["GET", `${RUN}/steps/ask/approval/decide`, "POST, OPTIONS"],
    ["POST", "/openapi.json", "GET, HEAD, OPTIONS"],
    ["POST", `${RUN}/view`, "GET, HEAD, OPTIONS"],
    ["DELETE", "/view/runs", "GET, HEAD, OPTIONS"],
  ];
  for (const [method, path, allow] of cases) {
    it(`${method} ${path.replace(RUN, "/runs/{id}")} is 405 method_not_allowed with Allow: ${allow}`, async () => {
      const res = await call(path, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe(allow);
      const body = await problem(res);
      expect(body.code).toBe("method_not_allowed");
      expect(body.detail).toContain(method);
    });
  }

  it("answers OPTIONS with 204 and the Allow list", async () => {
    const res = await call("/invoke/basic", { method: "OPTIONS" });
    expect(res.status).toBe(204);
    expect(res.headers.get("allow")).toBe("POST, OPTIONS");
    expect(await res.text()).toBe("");
    const run = await call(RUN, { method: "OPTIONS" });
    expect(run.status).toBe(204);
    expect(run.headers.get("allow")).toBe("GET, HEAD, DELETE, OPTIONS");
  });

  it("serves HEAD wherever GET is served, without a body", async () => {
    const res = await call("/health", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it("still answers 404 not_found for a path no route has, whatever the method", async () => {
    for (const [method, path] of [
      ["GET", "/nope"],
      ["POST", "/invoke/basic/extra"],
      ["DELETE", "/health/"],
      ["OPTIONS", "/nope"],
    ] as const) {
      const res = await call(path, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get("allow")).toBeNull();
      expect((await problem(res)).code).toBe("not_found");
    }
  });
});
