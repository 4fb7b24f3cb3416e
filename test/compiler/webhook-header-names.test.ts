/**
 * build checks (docs/file-format.md): mistakes that every run would trip over at run time
 * are build errors at the exact `file:line:col`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectOnlyError, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";

describe("webhook header names", () => {
  it("rejects a header name that is not an HTTP token (every request would fail)", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook:
      url: "https://hooks.example/x"
      headers:
        X-Ok: "1"
        Bad Name: "2"
`,
    });
    expectOnlyError(p, T, 15, 9, /^step `post`: header name `Bad Name` is not a valid HTTP header name/);
  });

  it("rejects a substitution in a header name (names are not substituted)", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook:
      url: "https://hooks.example/x"
      headers: { "{{ params.name }}": "v" }
`,
    });
    expectOnlyError(
      p,
      T,
      13,
      18,
      /header name `\{\{ params.name \}\}` is not a valid HTTP header name.*not substituted/,
    );
  });

  it("accepts the token characters RFC 9110 allows", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook:
      url: "https://hooks.example/x"
      headers: { "X-A_b.c!#$%&'*+^\`|~9": "v" }
`,
    });
    expect(p.errors.map((d) => d.text)).toEqual([]);
  });
});
