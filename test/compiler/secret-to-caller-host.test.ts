/**
 * The build's rule that a secret is never sent to a host the caller picks (docs/file-format.md,
 * "Webhook step"), against every way of writing either side: a secret read as `env.NAME`, as the
 * whole `env` (`{{ env }}`, `values(env)`, `env.*`, `env | NAME`), or through the whole scope
 * (`@`, `$`, `values(@)`); a caller host read as `params.url`, `@.params.url`, `$.params.url`,
 * `values(@)[0].url`, a `let` binding, or a function over params. Each pair is an error; an env or
 * literal host with the same secret is not. A url that can read a secret is marked in the bundle,
 * so its messages show the origin only.
 */
import { afterAll, describe, expect, it } from "vitest";
import { compileFiles, expectOnlyError, HEAD, removeProjects } from "./temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";
const HEAD_WITH_BASE = HEAD.replace(
  "  - {name: TOKEN, secret: true}",
  "  - {name: TOKEN, secret: true}\n  - {name: BASE, secret: false}",
);

function webhook(url: string, more = ""): string {
  return `${HEAD_WITH_BASE}  - id: a\n    webhook:\n      url: ${JSON.stringify(url)}\n${more}`;
}

const SECRET_READS: Array<[string, string]> = [
  ["env.TOKEN", "{{ env.TOKEN }}"],
  ["the whole env", "{{ env }}"],
  ["values(env)", "{{ values(env) }}"],
  ["env.* | [0]", "{{ env.* | [0] }}"],
  ["env | TOKEN", "{{ env | TOKEN }}"],
  ["the whole scope", "{{ @ }}"],
  ["the root", "{{ $ }}"],
  ["values(@)", "{{ values(@) }}"],
  ["to_string(@)", "{{ to_string(@) }}"],
  ["a let binding", "{{ let $e = env in $e.TOKEN }}"],
  ["env.[TOKEN]", "{{ env.[TOKEN] }}"],
];

const CALLER_HOSTS: Array<[string, string]> = [
  ["params.url", "{{ params.url }}"],
  ["@.params.url", "{{ @.params.url }}"],
  ["$.params.url", "{{ $.params.url }}"],
  ["values(@)[0].url", "{{ values(@)[0].url }}"],
  ["a let binding", "{{ let $p = params in $p.url }}"],
  ["join over params", "{{ join('', [params.scheme, '://', params.host]) }}"],
  ["a host built from params", "https://{{ params.host }}/hook"],
  ["a host after an env prefix", "{{ env.BASE }}{{ params.rest }}"],
  // The URL parser takes these as `https://host` too (found by mutation testing).
  ["a host after one slash", "https:/{{ params.host }}/hook"],
  ["a host after a backslash", "https:\\{{ params.host }}"],
  ["a host after three slashes", "https:///{{ params.host }}"],
  ["the whole scope", "{{ @ }}"],
];

describe("a secret sent to a host the caller picks", () => {
  for (const [readName, read] of SECRET_READS) {
    for (const [hostName, host] of CALLER_HOSTS) {
      it(`is refused: the secret read as ${readName}, the host from ${hostName}`, () => {
        const p = compileFiles({ [T]: webhook(host, `      body: {x: ${JSON.stringify(read)}}\n`) });
        // A url that reads the whole scope reads the secret too, and says so first.
        expectOnlyError(
          p,
          T,
          13,
          12,
          /^step `a` uses secret (`env\.TOKEN` in its url and )?`env\.TOKEN` in its body, but its url host comes from /,
        );
      });
    }
  }

  it("is refused when the secret is in a header and the url reads the whole scope", () => {
    const p = compileFiles({
      [T]: webhook("{{ @.params.url }}", '      headers: {Authorization: "Bearer {{ env | TOKEN }}"}\n'),
    });
    expectOnlyError(
      p,
      T,
      13,
      12,
      /uses secret `env\.TOKEN` in its headers, but its url host comes from `params\.url`/,
    );
  });

  it("is refused when the url itself reads the whole scope, secrets included", () => {
    const p = compileFiles({ [T]: webhook("{{ values(@)[0].url }}") });
    expectOnlyError(p, T, 13, 12, /uses secret `env\.TOKEN` in its url, but its url host comes from `@`/);
  });

  it("names every secret when the whole env is read", () => {
    const two = webhook("{{ params.url }}", '      body: {x: "{{ env }}"}\n').replace(
      "  - {name: BASE, secret: false}",
      "  - {name: BASE, secret: false}\n  - {name: OTHER, secret: true}",
    );
    const p = compileFiles({ [T]: two });
    expect(p.errors.map((d) => d.message)).toEqual([
      expect.stringMatching(/uses secret `env\.OTHER` in its body and `env\.TOKEN` in its body, but/),
    ]);
  });
});

describe("a secret sent to the operator's host", () => {
  for (const [readName, read] of SECRET_READS.filter(([, r]) => !/[@$]/.test(r.replace("$e", "")))) {
    it(`is accepted: the secret read as ${readName}, the host from an env var`, () => {
      const p = compileFiles({
        [T]: webhook("{{ env.BASE }}/hook", `      body: {x: ${JSON.stringify(read)}}\n`),
      });
      expect(p.errors).toEqual([]);
    });
  }

  it("is accepted with a literal host and a caller-chosen path", () => {
    const p = compileFiles({
      [T]: webhook("https://hooks.example.com/{{ params.path }}", '      body: {x: "{{ env.TOKEN }}"}\n'),
    });
    expect(p.errors).toEqual([]);
  });

  it("is accepted when the body reads only params and the host is the caller's", () => {
    const p = compileFiles({ [T]: webhook("{{ params.url }}", '      body: {x: "{{ params.x }}"}\n') });
    expect(p.errors).toEqual([]);
  });
});

describe("a url built from a secret", () => {
  it("is marked in the bundle, however the secret is read", () => {
    for (const url of [
      "{{ env.TOKEN }}",
      "https://hooks.example.com/{{ values(env)[0] }}",
      "{{ env | TOKEN }}",
    ]) {
      const p = compileFiles({ [T]: webhook(url) });
      const s = p.result.bundle?.workflows[T]?.steps[0];
      expect(s?.kind === "webhook" && s.urlReadsSecret, url).toBe(true);
    }
  });

  it("is not marked when it reads no secret", () => {
    const p = compileFiles({ [T]: webhook("{{ env.BASE }}/hook/{{ params.id }}") });
    const s = p.result.bundle?.workflows[T]?.steps[0];
    expect(s?.kind === "webhook" && s.urlReadsSecret).toBeUndefined();
  });
});
