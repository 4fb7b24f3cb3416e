/**
 * The build's `for_each` checks (docs/file-format.md): each mistake is reported
 * once, at its value.
 */
import { afterAll, describe, it } from "vitest";
import { compileFiles, expectOnlyError, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";

describe("for_each.from", () => {
  it("reports an empty from once (not also as invalid JMESPath)", () => {
    const p = compileFiles({
      [T]: `${HEAD}  - id: post
    webhook: {url: "https://example.com/{{ item }}"}
    for_each: {from: ""}
`,
    });
    expectOnlyError(p, T, 12, 22, /^step `post`: `for_each.from` must not be empty$/);
  });
});
