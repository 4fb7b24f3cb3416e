/**
 * Credential headers (src/triggers/credentials.ts), which every caller over HTTP meets: the
 * webhook's invoke, the protocols, the routes that read runs. Compared in constant time, refused
 * the same way whatever was wrong, and closed when the workflow's secret is not configured.
 */
import { describe, expect, it } from "vitest";
import type { CompiledAuth, TokenAuth } from "../../src/bundle.ts";
import {
  bearerToken,
  callerOpens,
  configuredSecrets,
  constantTimeEqual,
  matchesAny,
  requireCaller,
  requireToken,
  tokenOpens,
  unauthorized,
} from "../../src/triggers/credentials.ts";

const bearer: TokenAuth = { scheme: "bearer", header: "authorization", secretEnvs: ["TOKEN", "NEXT"] };
const raw: TokenAuth = { scheme: "raw", header: "x-api-key", secretEnvs: ["TOKEN"] };
const env = { TOKEN: "token-one-123456", NEXT: "token-two-654321" };
const headers = (h: Record<string, string>) => new Headers(h);

describe("the secrets a workflow names", () => {
  it("are read from env; an unset, empty or non-string one is a configuration error naming it", () => {
    expect(configuredSecrets(["A", "B"], { A: "one", B: "two" }, "signing secret")).toEqual(["one", "two"]);
    for (const e of [{ A: "one" }, { A: "one", B: "" }, { A: "one", B: 42 }]) {
      expect(() => configuredSecrets(["A", "B"], e, "signing secret")).toThrow(
        "the signing secret of this workflow is not configured (set B with wrangler secret put, or in .dev.vars)",
      );
    }
  });

  it("answers 401 with the headers it is given", () => {
    const p = unauthorized({ "www-authenticate": "Bearer" });
    expect(p.status).toBe(401);
    expect(p.code).toBe("unauthorized");
    expect(p.headers).toEqual({ "www-authenticate": "Bearer" });
    expect(unauthorized().headers).toEqual({});
  });
});

describe("comparing a presented value", () => {
  it("is equality, whatever the lengths and wherever they differ", async () => {
    expect(await constantTimeEqual("same value", "same value")).toBe(true);
    expect(await constantTimeEqual("", "")).toBe(true);
    for (const other of ["same valuE", "Same value", "same valu", "same value ", ""]) {
      expect(await constantTimeEqual("same value", other), other).toBe(false);
    }
  });

  it("matches any of several secrets, and never a value that was not presented", async () => {
    expect(await matchesAny("b", ["a", "b"])).toBe(true);
    expect(await matchesAny("a", ["a", "b"])).toBe(true);
    expect(await matchesAny("c", ["a", "b"])).toBe(false);
    expect(await matchesAny(null, ["", "a"])).toBe(false);
    expect(await matchesAny("", [])).toBe(false);
  });

  it("reads the token of `Bearer <token>`, the scheme in any case, spaces or tabs after it; no token is none", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("  bEaReR \t abc def ")).toBe("abc def");
    for (const v of [null, "Bearer ", "abc", "Basic abc", "Bearerabc"])
      expect(bearerToken(v), String(v)).toBeNull();
  });
});

describe("a credential header", () => {
  it("opens with any of the workflow's secrets, as a bearer token or a raw value", async () => {
    expect(await tokenOpens(bearer, headers({ authorization: `Bearer ${env.NEXT}` }), env)).toBe(true);
    expect(await tokenOpens(bearer, headers({ authorization: env.TOKEN }), env)).toBe(false);
    expect(await tokenOpens(raw, headers({ "x-api-key": env.TOKEN }), env)).toBe(true);
    expect(await tokenOpens(raw, headers({ "x-api-key": `Bearer ${env.TOKEN}` }), env)).toBe(false);
    expect(await tokenOpens(raw, headers({ authorization: env.TOKEN }), env)).toBe(false);
  });

  it("refuses with 401, a bearer challenge only where a bearer token is expected", async () => {
    await expect(requireToken(bearer, headers({}), env)).rejects.toMatchObject({
      status: 401,
      headers: { "www-authenticate": 'Bearer realm="workflow-edge"' },
    });
    await expect(requireToken(raw, headers({}), env)).rejects.toMatchObject({ status: 401, headers: {} });
    await expect(
      requireToken(bearer, headers({ authorization: `Bearer ${env.TOKEN}` }), env),
    ).resolves.toBeUndefined();
  });

  it("fails closed with 500 when the workflow's secret is not configured", async () => {
    await expect(requireToken(raw, headers({ "x-api-key": "" }), {})).rejects.toMatchObject({
      status: 500,
      code: "server_misconfigured",
    });
  });
});

describe("a protocol caller", () => {
  const github: CompiledAuth = { scheme: "github", secretEnvs: ["TOKEN"] } as unknown as CompiledAuth;

  it("needs nothing for a public workflow and the credential header otherwise", async () => {
    await expect(requireCaller(null, headers({}), {})).resolves.toBeUndefined();
    await expect(
      requireCaller(bearer, headers({ authorization: `Bearer ${env.TOKEN}` }), env),
    ).resolves.toBeUndefined();
    await expect(requireCaller(bearer, headers({}), env)).rejects.toMatchObject({ status: 401 });
  });

  it("is refused by a signature scheme, even holding its secret: a protocol request is never signed", async () => {
    await expect(
      requireCaller(github, headers({ authorization: `Bearer ${env.TOKEN}` }), env),
    ).rejects.toMatchObject({
      status: 401,
    });
    expect(await callerOpens(github, headers({ authorization: `Bearer ${env.TOKEN}` }), env)).toBe(false);
  });

  it("opens a workflow or not, and an unconfigured secret opens nothing (never a 500)", async () => {
    expect(await callerOpens(null, headers({}), {})).toBe(true);
    expect(await callerOpens(bearer, headers({ authorization: `Bearer ${env.TOKEN}` }), env)).toBe(true);
    expect(await callerOpens(bearer, headers({ authorization: "Bearer nope" }), env)).toBe(false);
    expect(await callerOpens(bearer, headers({ authorization: `Bearer ${env.TOKEN}` }), {})).toBe(false);
  });
});
