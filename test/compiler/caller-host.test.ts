/**
 * The two facts the build's "no secret to a host the caller picks" rule stands on
 * (src/compiler/caller-host.ts): which secrets a template can read, and whether the host of a URL
 * template can come from the caller. Templates are written as the compiler emits them.
 */
import { describe, expect, it } from "vitest";
import type { Template } from "../../src/bundle.ts";
import { callerHost, hostSource, secretReads } from "../../src/compiler/caller-host.ts";

const expr = (e: string): Template => ({ t: "expr", e });
const concat = (...parts: Array<string | { e: string }>): Template => ({ t: "concat", parts });
const SECRETS = new Set(["TOKEN", "OTHER"]);

describe("the secrets a template can read", () => {
  it("names the secret env vars read by name, sorted, and ignores the ones that are not secret", () => {
    expect(secretReads(expr("join('', [env.TOKEN, env.BASE, params.x])"), SECRETS)).toEqual(["TOKEN"]);
    expect(secretReads(concat("a", { e: "env.OTHER" }, "b", { e: "env.TOKEN" }), SECRETS)).toEqual([
      "OTHER",
      "TOKEN",
    ]);
  });

  it("counts every secret for env as a whole, the whole scope, or what the checker cannot read", () => {
    for (const e of ["env", "values(env)", "env.* | [0]", "@", "values(@)", "$", "env | TOKEN", "((("]) {
      expect(secretReads(expr(e), SECRETS), e).toEqual(["OTHER", "TOKEN"]);
    }
  });

  it("reads no secret from a param or a step output that shares a secret's name", () => {
    expect(secretReads(expr("params.TOKEN"), SECRETS)).toEqual([]);
    expect(secretReads(expr("params"), SECRETS)).toEqual([]);
    expect(secretReads(expr("step.TOKEN.result"), SECRETS)).toEqual([]);
  });

  it("names the secrets sorted whatever order the template reads them in", () => {
    expect(secretReads(concat({ e: "env.TOKEN" }, "/", { e: "env.OTHER" }), SECRETS)).toEqual([
      "OTHER",
      "TOKEN",
    ]);
  });

  it("reads secrets inside objects and arrays, and none from literals", () => {
    const t: Template = {
      t: "obj",
      entries: [
        ["a", { t: "lit", v: "env.TOKEN" }],
        ["b", { t: "arr", items: [{ t: "lit", v: 1 }, expr("env.OTHER")] }],
      ],
    };
    expect(secretReads(t, SECRETS)).toEqual(["OTHER"]);
    expect(secretReads({ t: "lit", v: "{{ env.TOKEN }}" }, SECRETS)).toEqual([]);
    expect(secretReads(null, SECRETS)).toEqual([]);
    expect(secretReads(expr("env"), new Set())).toEqual([]);
  });
});

describe("where a URL's host comes from", () => {
  it("is the operator's for a literal, an env var, or an expression after the authority", () => {
    expect(hostSource({ t: "lit", v: "https://a.example/x" })).toBeNull();
    expect(hostSource(expr("env.BASE"))).toBeNull();
    expect(hostSource(concat({ e: "env.BASE" }, "/items/", { e: "params.id" }))).toBeNull();
    expect(hostSource(concat({ e: "env.BASE" }, "//", { e: "params.id" }))).toBeNull();
    expect(hostSource(concat({ e: "env.BASE" }, "?next=https://", { e: "params.id" }))).toBeNull();
    expect(hostSource(concat("https://a.example/", { e: "params.path" }))).toBeNull();
    expect(hostSource(concat("https://a.example?q=", { e: "params.q" }))).toBeNull();
    expect(hostSource(concat("https://a.example#", { e: "params.f" }))).toBeNull();
    expect(hostSource(expr("'https://a.example'"))).toBeNull();
  });

  it("is the caller's for any expression that can produce the authority", () => {
    expect(hostSource(expr("params.url"))).toBe("params.url");
    expect(hostSource(expr("step.lookup.body.url"))).toBe("step.lookup");
    expect(hostSource(expr("@.params.url"))).toBe("params.url");
    expect(hostSource(expr("values(@)[0]"))).toBe("@");
    expect(hostSource(expr("((("))).toBe("@");
    expect(hostSource(concat("https://", { e: "params.host" }, "/x"))).toBe("params.host");
    expect(hostSource(concat({ e: "env.BASE" }, { e: "params.rest" }))).toBe("params.rest");
    // A URL without a scheme is refused when sent; if it were sent, the host would be the caller's.
    expect(hostSource(concat("//", { e: "params.host" }))).toBe("params.host");
    expect(hostSource(concat("https://api.", { e: "request.headers.x_tenant" }, ".example.com/"))).toBe(
      "request.headers",
    );
  });

  it("is the caller's wherever the URL parser reads the host: after one slash, a backslash, three slashes, a space or a tab", () => {
    for (const prefix of [
      "https:/",
      "https:\\",
      "https:///",
      "https:",
      " https://",
      "\thttps://",
      "ht\ttps://",
      "HTTPS://",
    ]) {
      // The parser's own reading first: what follows the prefix is the host.
      expect(new URL(`${prefix}evil.example/x`).host, JSON.stringify(prefix)).toBe("evil.example");
      expect(hostSource(concat(prefix, { e: "params.host" }, "/x")), JSON.stringify(prefix)).toBe(
        "params.host",
      );
    }
    for (const prefix of [
      "https://a.example/",
      "https://a.example\\",
      "https:/a.example/",
      "https:///a.example?",
    ]) {
      expect(new URL(`${prefix}evil.example`).host, prefix).toBe("a.example");
      expect(hostSource(concat(prefix, { e: "params.path" })), prefix).toBeNull();
    }
  });

  it("names a fan-out item's host as the caller's only when the items are", () => {
    expect(callerHost(expr("item.url"), "params.targets")).toBe("`item.url` (items of `params.targets`)");
    expect(callerHost(expr("item.url"), "env.TARGETS")).toBeNull();
    expect(callerHost(expr("item"), null)).toBeNull();
    expect(callerHost(expr("params.url"), null)).toBe("`params.url`");
    expect(callerHost(expr("params.item"), null)).toBe("`params.item`");
    expect(callerHost(expr("step.item_index.url"), null)).toBe("`step.item_index`");
    expect(callerHost(expr("env.URL"), "params.x")).toBeNull();
  });
});
