/**
 * `npm run test:workflows` as users run it: exit codes, a line per case, failures printed as
 * `file:line:col` with the expected and the actual value, no request ever leaving the machine
 * for an unmocked step, and no secret in anything printed.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeProjects, writeProject } from "../compiler/temp-project.ts";
import { startWebhookTarget } from "../servers/webhook-target.ts";
import { FIXTURE, runCli, runTests } from "./helpers.ts";

afterAll(removeProjects);

const GREET = `kind: workflow
name: greet
params: { schema: { type: object } }
pipeline:
  - id: names
    transform:
      inputs: [{ from: "{{ {names: ['Ada', 'Lin']} }}" }]
`;

describe("the CLI", () => {
  it("exits 0 and prints each case with its result when every case passes", () => {
    const r = runCli(FIXTURE);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("test/fixtures/wftest-project/tests/signed.test.yaml (signed)");
    expect(r.stdout).toMatch(/ {2}✓ retries through a mock list \(\d+ ms, 40 s virtual\)\n/);
    expect(r.stdout).toMatch(/ {2}✓ times out after 10 minutes \(\d+ ms, 10 min virtual\)\n/);
    expect(r.stdout).toMatch(/7 cases in 5 files: 7 passed, 0 failed \(\d+\.\d+ s\)\n$/);
  });

  it("exits 1 and points at the expectation that failed, with expected and actual", () => {
    const dir = writeProject({
      "greet.workflow.yaml": GREET,
      "tests/greet.test.yaml": `kind: test
workflow: greet
cases:
  - name: passes
    expect: { output: { result: { names: [Ada, Lin] } } }
  - name: expects the wrong order
    expect:
      status: complete
      output: { result: { names: [Lin, Ada] } }
`,
    });
    const r = runCli(dir);
    const file = join(dir, "tests/greet.test.yaml");
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/ {2}✓ passes/);
    expect(r.stdout).toMatch(/ {2}✗ expects the wrong order/);
    expect(r.stdout).toContain(`${file}:9:35: expect.output.result.names[0]: expected "Lin", got "Ada"`);
    expect(r.stdout).toContain(`${file}:9:40: expect.output.result.names[1]: expected "Ada", got "Lin"`);
    expect(r.stdout).toContain('expected: {"result":{"names":["Lin","Ada"]}}');
    expect(r.stdout).toContain('actual:   {"result":{"names":["Ada","Lin"]}}');
    expect(r.stdout).toContain("2 cases in 1 file: 1 passed, 1 failed");
  });

  it("gives a residency workflow's runs ids in its jurisdiction, as deployed runs have", () => {
    const dir = writeProject({
      "greet.workflow.yaml": GREET.replace("name: greet\n", "name: greet\nresidency: eu\n"),
      "tests/greet.test.yaml": `kind: test
workflow: greet
cases:
  - name: eu run id
    expect:
      assert: ["starts_with(run.run_id, 'eu-')"]
`,
    });
    const r = runCli(dir);
    expect(r.stdout).toMatch(/ {2}✓ eu run id/);
    expect(r.code).toBe(0);
  });

  it("exits 1, prints every compile error and runs no case when a test file is wrong", () => {
    const dir = writeProject({
      "greet.workflow.yaml": GREET,
      "tests/greet.test.yaml": `kind: test
workflow: greet
cases:
  - name: typo
    expect:
      steps:
        nmaes: { status: complete }
`,
    });
    const r = runCli(dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${join(dir, "tests/greet.test.yaml")}:7:9: expect.steps: \`nmaes\` is not a step of workflow \`greet\`; did you mean \`names\`?`,
    );
    expect(r.stdout).toMatch(/1 error; no case ran/);
    expect(r.stdout).not.toContain("✓");
  });

  it("runs only the files it is given", () => {
    const r = runCli(join(FIXTURE, "tests/edge.test.yaml"));
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("signed.test.yaml");
    expect(r.stdout).toContain("1 case in 1 file: 1 passed, 0 failed");
  });

  it("exits 1 when a path holds no test file", () => {
    const r = runCli(join(FIXTURE, "agents"));
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("no *.test.yaml file here");
  });
});

describe("an unmocked step", () => {
  let target: { port: number; close(): Promise<void> };
  beforeAll(async () => {
    target = await startWebhookTarget();
  });
  afterAll(() => target.close());

  const logOf = async (key: string) =>
    (await (await fetch(`http://127.0.0.1:${target.port}/log?key=${key}`)).json()) as unknown[];

  it("fails the case with unmocked_step naming the step, and nothing is sent", async () => {
    const base = `http://127.0.0.1:${target.port}`;
    const dir = writeProject({
      "gateway.yaml": `env:
  - { name: MODEL_KEY, secret: true }
  - { name: MODEL_URL, secret: false }
providers:
  - { name: stub, type: openai, config: { base_url: "{{ env.MODEL_URL }}", api_key: "{{ env.MODEL_KEY }}" } }
model_groups:
  - { name: g, models: [stub/m] }
`,
      "send.workflow.yaml": `kind: workflow
name: send
params: { schema: { type: object } }
pipeline:
  - id: ask
    agent: core/chat@1.0.0
    params: { prompt: hi }
  - id: post
    webhook: { url: "${base}/echo?key=unmocked-post" }
`,
      "tests/send.test.yaml": `kind: test
workflow: send
cases:
  - name: forgot the webhook
    env: { ALLOW_PRIVATE_WEBHOOKS: "true", MODEL_KEY: model-key-12345, MODEL_URL: "${base}/model" }
    mocks:
      ask: { output: { text: hello } }
    expect: { status: complete }
  - name: forgot the agent
    env: { ALLOW_PRIVATE_WEBHOOKS: "true", MODEL_KEY: model-key-12345, MODEL_URL: "${base}/model" }
    mocks:
      post: { status: 200 }
    expect: { status: failed }
`,
    });
    // The server does record what reaches it.
    await fetch(`${base}/echo?key=unmocked-control`);
    expect(await logOf("unmocked-control")).toHaveLength(1);

    const { summary, out } = await runTests(dir);
    expect(summary).toMatchObject({ cases: 2, passed: 0, failed: 2 });
    expect(out).toContain("unmocked_step: webhook step `post` has no mock");
    // It fails even where the expectation (status failed) would have matched.
    expect(out).toContain("unmocked_step: agent step `ask` has no mock");
    expect(await logOf("unmocked-post")).toEqual([]);
    expect(await logOf("")).toEqual([]);
  });
});

describe("secrets", () => {
  const TOKEN = "tok-sEcReT-4711-value";

  it("never reach the output: not in values, messages, names, nor in an encoded form", () => {
    const dir = writeProject({
      "echo.workflow.yaml": `kind: workflow
name: echo
params: { schema: { type: object } }
env:
  - { name: TOKEN, secret: true }
invoke:
  auth: { secret: "{{ env.TOKEN }}" }
pipeline:
  - id: call
    webhook:
      url: https://api.example/echo
      headers: { Authorization: "Bearer {{ env.TOKEN }}" }
      body: { token: "{{ env.TOKEN }}" }
`,
      "tests/echo.test.yaml": `kind: test
workflow: echo
cases:
  - name: echoes ${TOKEN}
    params: { note: "${TOKEN}" }
    env: { TOKEN: "${TOKEN}" }
    mocks:
      call: { status: 500, body: { echoed: "${TOKEN}", b64: "${btoa(TOKEN)}" } }
    expect:
      status: complete
      output: { body: { echoed: "not ${TOKEN}" } }
      steps:
        call:
          request: { headers: { authorization: "Basic ${TOKEN}" }, body: { token: "x" } }
      assert: ["params.note == 'nope' && env.TOKEN == '${TOKEN}x'"]
`,
    });
    const r = runCli(dir);
    expect(r.code).toBe(1);
    const printed = r.stdout + r.stderr;
    expect(printed).toContain("✗ echoes ***");
    expect(printed).toContain('got "Bearer ***"');
    expect(printed).toContain('expect.steps.call.request.body.token: expected "x", got "***"');
    expect(printed).not.toContain(TOKEN);
    expect(printed).not.toContain(btoa(TOKEN).replace(/=+$/, ""));
    expect(printed).not.toContain(encodeURIComponent(TOKEN));
  });
});
