/**
 * Build checks of docs/triggers.md, docs/file-format.md that were once missing: each test here failed
 * before its fix.
 */
import { afterAll, describe, it } from "vitest";
import { compileFiles, expectDiagnostic, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const WRANGLER = `[[ratelimits]]
name = "RL"
namespace_id = "1"
simple = { limit = 10, period = 60 }
`;

describe("item and item_index outside a fan-out step's substitutions", () => {
  it("are build errors in invoke.response.body and invoke.rate_limit.key (docs/file-format.md: anywhere else)", () => {
    const p = compileFiles({
      "wrangler.toml": WRANGLER,
      [T]: `kind: workflow
name: t
params:
  schema: {type: object, properties: {xs: {type: array}}}
invoke:
  response: {body: {first: "{{ item }}"}}
  rate_limit: {binding: RL, key: "k{{ item_index }}"}
pipeline:
  - id: a
    webhook: {url: "https://hooks.example.com/{{ item }}"}
    for_each: {from: params.xs}
`,
    });
    expectDiagnostic(
      p,
      "error",
      T,
      6,
      28,
      /`invoke\.response\.body`: `item` is only defined in the substitutions of a step with `for_each`/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      7,
      34,
      /`invoke\.rate_limit\.key`: `item_index` is only defined in the substitutions of a step with `for_each`/,
    );
  });
});
