/**
 * Build checks of triggers (docs/triggers.md): each signature scheme's fields, request headers,
 * invoke.response, invoke.rate_limit and schedule, with the exact `file:line:col` and, where
 * wrangler.toml is involved, the lines to add.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { SignatureAuth } from "../../../src/bundle.ts";
import { cronProblem } from "../../../src/compiler/triggers/cron/cron.ts";
import { compileFiles, expectDiagnostic, expectOnlyError, removeProjects } from "../temp-project.ts";

afterAll(removeProjects);

const T = "t.workflow.yaml";

/** A root workflow with env S (secret), P (not secret), and the given `invoke:` lines (line 9 on). */
function wf(invoke: string, pipeline = "  - id: a\n    transform: {ops: []}\n", extra = ""): string {
  return `kind: workflow
name: t
params:
  schema: {type: object, properties: {user: {type: string}}}
env:
  - {name: S, secret: true}
  - {name: P, secret: false}
invoke:
${invoke}pipeline:
${pipeline}${extra}`;
}

describe("signature schemes", () => {
  it("compiles each scheme with its defaults", () => {
    for (const scheme of ["github", "stripe", "slack", "standard-webhooks", "shopify", "linear", "twilio"]) {
      const p = compileFiles({ [T]: wf(`  auth: {scheme: ${scheme}, secret: "{{ env.S }}"}\n`) });
      expect(p.errors, scheme).toEqual([]);
      const auth = p.result.bundle?.workflows[T]?.auth as SignatureAuth;
      expect(auth).toMatchObject({ scheme, secretEnvs: ["S"], toleranceS: 300 });
    }
  });

  it("compiles hmac's header, prefix, algorithm and encoding, and a list of secrets", () => {
    const p = compileFiles({
      [T]: wf(
        '  auth:\n    scheme: hmac\n    header: X-Sig\n    prefix: "sha1="\n    algorithm: sha1\n    encoding: base64\n    secret: ["{{ env.S }}", "{{ env.P }}"]\n',
      ),
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.auth).toMatchObject({
      scheme: "hmac",
      secretEnvs: ["S", "P"],
      hmac: { header: "x-sig", prefix: "sha1=", algorithm: "sha1", encoding: "base64" },
    });
  });

  it("requires `header` for hmac", () => {
    const p = compileFiles({ [T]: wf('  auth: {scheme: hmac, secret: "{{ env.S }}"}\n') });
    expectOnlyError(
      p,
      T,
      9,
      3,
      /^scheme `hmac` needs `header`: the request header that carries the signature$/,
    );
  });

  it("requires `public_key` for discord and points `secret` at it", () => {
    const missing = compileFiles({ [T]: wf("  auth: {scheme: discord}\n") });
    expectOnlyError(missing, T, 9, 3, /^scheme `discord` needs `public_key`/);
    const secret = compileFiles({ [T]: wf('  auth: {scheme: discord, secret: "{{ env.S }}"}\n') });
    expectDiagnostic(secret, "error", T, 9, 27, /not a shared secret; did you mean `public_key`\?$/);
  });

  it("accepts a discord public key as 64 hex digits or an env reference, nothing else", () => {
    const hex = "a".repeat(64);
    expect(compileFiles({ [T]: wf(`  auth: {scheme: discord, public_key: "${hex}"}\n`) }).errors).toEqual([]);
    expect(
      compileFiles({ [T]: wf('  auth: {scheme: discord, public_key: "{{ env.P }}"}\n') }).errors,
    ).toEqual([]);
    const bad = compileFiles({ [T]: wf('  auth: {scheme: discord, public_key: "abc"}\n') });
    expectOnlyError(
      bad,
      T,
      9,
      39,
      /^`invoke\.auth\.public_key` must be the application's public key as 64 hex digits/,
    );
  });

  it("requires `secret` for the other schemes", () => {
    const p = compileFiles({ [T]: wf("  auth: {scheme: github}\n") });
    expectOnlyError(p, T, 9, 3, /^scheme `github` needs `secret`/);
  });

  it("rejects a field of another scheme, naming the schemes it belongs to", () => {
    const p = compileFiles({ [T]: wf('  auth: {scheme: github, secret: "{{ env.S }}", tolerance_s: 60}\n') });
    expectOnlyError(
      p,
      T,
      9,
      49,
      /^`invoke\.auth\.tolerance_s` does not apply to scheme `github` \(only to `stripe`, `slack`, `standard-webhooks`, `linear`, `discord`\)$/,
    );
  });

  it("suggests the scheme meant by a typo", () => {
    const p = compileFiles({ [T]: wf('  auth: {scheme: githbu, secret: "{{ env.S }}"}\n') });
    expectOnlyError(p, T, 9, 18, /got `githbu`; did you mean `github`\?$/);
  });

  it("checks every secret of a list is a declared env var", () => {
    const p = compileFiles({
      [T]: wf('  auth: {scheme: slack, secret: ["{{ env.S }}", "{{ env.NOPE }}"]}\n'),
    });
    expectOnlyError(p, T, 9, 49, /^`env\.NOPE` is not declared in `env`/);
  });
});

describe("request headers", () => {
  it("refuses credential headers and the scheme's signature header", () => {
    const p = compileFiles({
      [T]: wf(
        '  auth: {scheme: github, secret: "{{ env.S }}"}\n  headers: [Authorization, X-Hub-Signature-256, Cookie, X-GitHub-Event]\n',
      ),
    });
    expectDiagnostic(
      p,
      "error",
      T,
      10,
      13,
      /^`invoke\.headers` may not record `Authorization`: it carries credentials$/,
    );
    expectDiagnostic(
      p,
      "error",
      T,
      10,
      28,
      /may not record `X-Hub-Signature-256`: it is the `github` signature header$/,
    );
    expectDiagnostic(p, "error", T, 10, 49, /may not record `Cookie`/);
    expect(p.errors).toHaveLength(3);
  });

  it("refuses the raw scheme's own credential header", () => {
    const p = compileFiles({
      [T]: wf('  auth: {header: X-Api-Key, secret: "{{ env.S }}"}\n  headers: [x-api-key]\n'),
    });
    expectOnlyError(p, T, 10, 13, /it is this workflow's `invoke\.auth` header$/);
  });

  it("rejects a read of an undeclared header, with the names it can read", () => {
    const p = compileFiles({
      [T]: wf(
        "  headers: [X-GitHub-Event]\n",
        "  - id: a\n    condition: \"request.headers.x_github_evnt == 'push'\"\n    transform: {ops: []}\n",
      ),
    });
    expectOnlyError(
      p,
      T,
      12,
      16,
      /^step `a`: `request\.headers\.x_github_evnt` is not a declared header \(declared: `x_github_event`; did you mean `x_github_event`\?\)\. List it in `invoke\.headers`/,
    );
  });

  it("rejects request fields other than headers, and request in a sub-workflow", () => {
    const other = compileFiles({
      [T]: wf("  headers: [X-A]\n", '  - id: a\n    transform: {inputs: [{from: "{{ request.body }}"}]}\n'),
    });
    expectOnlyError(other, T, 12, 33, /`request\.body` does not exist/);

    const child = `kind: workflow
name: child
params:
  schema: {type: object}
pipeline:
  - id: c
    transform: {inputs: [{from: "{{ request.headers }}"}]}
`;
    const p = compileFiles({
      [T]: wf("  headers: [X-A]\n", "  - id: a\n    workflow: ./subs/child.yaml\n"),
      "subs/child.yaml": child,
    });
    expectDiagnostic(
      p,
      "error",
      "subs/child.yaml",
      7,
      33,
      /`request` is not available here: `subs\/child\.yaml` is used as a sub-workflow/,
    );
  });

  it("compiles declared headers with the key expressions read", () => {
    const p = compileFiles({ [T]: wf("  headers: [X-GitHub-Event, x-request-id]\n") });
    expect(p.result.bundle?.workflows[T]?.invoke.headers).toEqual([
      { name: "x-github-event", key: "x_github_event" },
      { name: "x-request-id", key: "x_request_id" },
    ]);
  });

  it("rejects two headers read under one name", () => {
    const p = compileFiles({ [T]: wf("  headers: [X-A_b, x-a-B]\n") });
    expectOnlyError(p, T, 9, 20, /would both be read as `request\.headers\.x_a_b`/);
  });
});

describe("invoke.response", () => {
  it("compiles status, wait, content type and the body template", () => {
    const p = compileFiles({
      [T]: wf('  response: {status: 201, wait_s: 3, body: {id: "{{ step.a.result }}", by: "{{ env.P }}"}}\n'),
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.invoke.response).toMatchObject({
      status: 201,
      waitS: 3,
      contentType: "application/json",
      body: { t: "obj" },
    });
  });

  it("refuses a secret env var in the body: the response goes to the caller", () => {
    const p = compileFiles({ [T]: wf('  response: {body: "{{ env.S }}"}\n') });
    expectOnlyError(p, T, 9, 20, /reads secret `env\.S`: the response goes to the caller/);
  });

  it("needs a string body for text/plain and text/xml", () => {
    const p = compileFiles({ [T]: wf("  response: {content_type: text/plain, body: {a: 1}}\n") });
    expectOnlyError(p, T, 9, 46, /must be a string for content type `text\/plain`/);
  });

  it("checks the step ids the body reads and the wait range", () => {
    const p = compileFiles({ [T]: wf('  response: {wait_s: 61, body: "{{ step.b.result }}"}\n') });
    expectDiagnostic(
      p,
      "error",
      T,
      9,
      22,
      /`invoke\.response\.wait_s` must be an integer in 1\.\.60, got 61/,
    );
    expectDiagnostic(p, "error", T, 9, 32, /`step\.b` is not a step of this pipeline/);
  });
});

describe("invoke.rate_limit", () => {
  const TOML =
    '[[ratelimits]]\nname = "LIMIT"\nnamespace_id = "1001"\nsimple = { limit = 10, period = 10 }\n';

  it("compiles a binding declared in wrangler.toml, with its period", () => {
    const p = compileFiles({
      [T]: wf('  rate_limit: {binding: LIMIT, key: "{{ params.user }}"}\n'),
      "wrangler.toml": TOML,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.invoke.rateLimit).toMatchObject({ binding: "LIMIT", periodS: 10 });
  });

  it("rejects a binding wrangler.toml does not declare, showing the block to add", () => {
    const p = compileFiles({ [T]: wf("  rate_limit: {binding: LIMTI}\n"), "wrangler.toml": TOML });
    const d = expectDiagnostic(
      p,
      "error",
      T,
      9,
      25,
      /^rate limit binding `LIMTI` is not declared in .*wrangler\.toml; did you mean `LIMIT`\?; add:/,
    );
    expect(d.message).toContain(
      '[[ratelimits]]\nname = "LIMTI"\nnamespace_id = "1001"\nsimple = { limit = 100, period = 60 }',
    );
  });

  it("lets the key read only params and request", () => {
    const p = compileFiles({
      [T]: wf('  rate_limit: {binding: LIMIT, key: "{{ step.a.result }}"}\n'),
      "wrangler.toml": TOML,
    });
    expectOnlyError(
      p,
      T,
      9,
      37,
      /`invoke\.rate_limit\.key` may read only `params` and `request`, not `step`/,
    );
  });
});

describe("schedule", () => {
  const TOML = '[triggers]\ncrons = ["*/5 * * * *"]\n';
  const sched = (entries: string) => wf("  headers: []\n", undefined, `schedule:\n${entries}`);

  it("compiles entries whose cron wrangler.toml lists, with their params", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "*/5 * * * *", params: {user: ada}}\n'),
      "wrangler.toml": TOML,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.schedule).toEqual([
      { cron: "*/5 * * * *", timezone: "UTC", params: { user: "ada" } },
    ]);
  });

  it("rejects a cron wrangler.toml does not list, showing the crons line to set", () => {
    const p = compileFiles({ [T]: sched('  - {cron: "0 6 * * *"}\n'), "wrangler.toml": TOML });
    const d = expectDiagnostic(
      p,
      "error",
      T,
      14,
      12,
      /^cron `0 6 \* \* \*` is not listed in .*wrangler\.toml `\[triggers\] crons`, so it would never fire/,
    );
    expect(d.message).toContain('[triggers]\ncrons = ["*/5 * * * *", "0 6 * * *"]');
  });

  it("rejects a cron when there is no wrangler.toml at all", () => {
    const p = compileFiles({ [T]: sched('  - {cron: "0 6 * * *"}\n') });
    expectOnlyError(p, T, 14, 12, /needs .*wrangler\.toml, which does not exist/);
  });

  it("rejects invalid cron syntax", () => {
    const p = compileFiles({ [T]: sched('  - {cron: "61 * * * *"}\n'), "wrangler.toml": TOML });
    expectOnlyError(p, T, 14, 12, /^invalid cron `61 \* \* \* \*`: minute `61`: `61` is not in 0-59$/);
  });

  it("checks each entry's params against params.schema", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "*/5 * * * *", params: {user: 7}}\n'),
      "wrangler.toml": TOML,
    });
    expectOnlyError(p, T, 14, 35, /^schedule params do not match params\.schema: \/user:/);
  });

  it("refuses a cron that can never fire, at the cron", () => {
    const p = compileFiles({ [T]: sched('  - {cron: "0 0 30 2 *"}\n'), "wrangler.toml": TOML });
    expectOnlyError(p, T, 14, 12, /^cron `0 0 30 2 \*` never fires: no date matches it$/);
  });

  it("rejects a schedule on a file that is not invocable", () => {
    const child = `kind: workflow\nname: child\nparams:\n  schema: {type: object}\nschedule:\n  - {cron: "*/5 * * * *"}\npipeline:\n  - id: c\n    transform: {ops: []}\n`;
    const p = compileFiles({
      [T]: wf("  headers: []\n", "  - id: a\n    workflow: ./subs/child.yaml\n"),
      "subs/child.yaml": child,
      "wrangler.toml": TOML,
    });
    expectDiagnostic(p, "error", "subs/child.yaml", 5, 1, /^`schedule` is for invocable workflows/);
  });

  it("reports an unreadable wrangler.toml with its own position", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "*/5 * * * *"}\n'),
      "wrangler.toml": "[triggers\ncrons = 1\n",
    });
    expectDiagnostic(p, "error", "wrangler.toml", 1, 10, /^cannot read wrangler\.toml:/);
  });
});

describe("cron syntax", () => {
  it.each([
    "* * * * *",
    "*/5 * * * *",
    "0 6 * * MON-FRI",
    "0 0 1 JAN,jul *",
    "59 23 LW * *",
    "0 12 15W * *",
    "0 9 * * FRI#2",
    "0 9 * * 6L",
    "0-30/10 1-5 * * 1,3,7",
  ])("accepts %s", (cron) => {
    expect(cronProblem(cron)).toBeNull();
  });

  it.each([
    ["* * * *", /five fields/],
    ["* * * * * *", /five fields/],
    ["60 * * * *", /minute `60`/],
    ["* 24 * * *", /hour `24`/],
    ["* * 0 * *", /day of month `0`/],
    ["* * * 13 *", /month `13`/],
    ["* * * * 8", /day of week `8`/],
    ["*/0 * * * *", /a step of 0/],
    ["5-1 * * * *", /runs backwards/],
    ["* * * FOO *", /month `FOO`/],
  ])("rejects %s", (cron, problem) => {
    expect(cronProblem(cron)).toMatch(problem);
  });
});

describe("schedules in local time", () => {
  const TOML = '[triggers]\ncrons = ["30 7,8 * * 1-5"]\n';
  const sched = (entries: string) => wf("  headers: []\n", undefined, `schedule:\n${entries}`);

  it("compiles an entry in a zone when wrangler.toml lists the UTC crons that cover it", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "30 9 * * 1-5", timezone: Europe/Berlin}\n'),
      "wrangler.toml": TOML,
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows[T]?.schedule).toEqual([
      { cron: "30 9 * * 1-5", timezone: "Europe/Berlin", params: {} },
    ]);
  });

  it("shows the exact [triggers] line when wrangler.toml lacks the UTC crons of a zone's entry", () => {
    const p = compileFiles({
      [T]: sched(
        '  - {cron: "0 9 * * *", timezone: Asia/Kolkata}\n  - {cron: "30 2 * * *", timezone: America/New_York}\n',
      ),
      "wrangler.toml": TOML,
    });
    const kolkata = expectDiagnostic(
      p,
      "error",
      T,
      14,
      12,
      /^cron `0 9 \* \* \*` in Asia\/Kolkata fires at the UTC crons `30 3 \* \* \*`/,
    );
    expect(kolkata.message).toContain('set:\n[triggers]\ncrons = ["30 7,8 * * 1-5", "30 3 * * *"]');
    // Both offsets of New York, and 02:30 on the day it is skipped fires at 03:30 EDT (07:30 UTC).
    const ny = expectDiagnostic(
      p,
      "error",
      T,
      15,
      12,
      /in America\/New_York fires at the UTC crons `30 6,7 \* \* \*`/,
    );
    expect(ny.message).toContain('crons = ["30 7,8 * * 1-5", "30 6,7 * * *"]');
    expect(p.errors).toHaveLength(2);
  });

  it("covers a zone whose local day starts on the previous UTC day with every day's crons", () => {
    const p = compileFiles({
      [T]: sched(
        '  - {cron: "0 9 * * 1-5", timezone: Australia/Sydney}\n  - {cron: "15 * * * *", timezone: Asia/Kolkata}\n',
      ),
      "wrangler.toml": '[triggers]\ncrons = ["0 22,23 * * *", "45 * * * *"]\n',
    });
    expect(p.errors).toEqual([]);
  });

  it("rejects an unknown zone at the timezone, with the closest name", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "30 9 * * 1-5", timezone: Europe/Berln}\n'),
      "wrangler.toml": TOML,
    });
    expectOnlyError(
      p,
      T,
      14,
      38,
      /^unknown time zone `Europe\/Berln` \(an IANA name such as `Europe\/Berlin`\); did you mean `Europe\/Berlin`\?$/,
    );
  });

  it("rejects a UTC offset, which is not a zone", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "30 9 * * *", timezone: "+05:30"}\n'),
      "wrangler.toml": TOML,
    });
    expectOnlyError(p, T, 14, 36, /^unknown time zone `\+05:30`/);
  });

  it("refuses a cron that never fires in a zone too", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "0 0 31 4,6,9,11 *", timezone: Europe/Berlin}\n'),
      "wrangler.toml": TOML,
    });
    expectOnlyError(p, T, 14, 12, /^cron `0 0 31 4,6,9,11 \*` never fires: no date matches it$/);
  });

  it("refuses Cloudflare's forms croner cannot read in a zone, and keeps them in UTC", () => {
    const p = compileFiles({
      [T]: sched('  - {cron: "0 12 L-3 * *", timezone: Europe/Berlin}\n  - {cron: "0 12 L-3 * *"}\n'),
      "wrangler.toml": '[triggers]\ncrons = ["0 12 L-3 * *"]\n',
    });
    expectOnlyError(
      p,
      T,
      14,
      12,
      /^cron `0 12 L-3 \* \*` cannot be used with a `timezone`: the day-of-month form `L-n` is for UTC schedules only$/,
    );
  });
});
