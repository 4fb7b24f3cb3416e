/**
 * The command line (docs/cli.md) without a deployment: usage errors exit 2 with a clear message,
 * API errors exit 1 as `error: <code>: <detail>` on stderr (a real HTTP server on 127.0.0.1
 * answers as the Worker does), `--json` prints exactly the API's JSON, and `init NAME` writes a
 * workflow and a test that pass `validate` and `test`. Every command against a real Worker:
 * test/e2e/cli.e2e.test.ts.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, runCli } from "./run-cli.ts";

const cli = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) => runCli(args, opts);

/** What the Worker answers to these requests (`METHOD path`), as it does; anything else below. */
const ANSWERS: Record<string, { status: number; body: unknown }> = {
  "GET /workflows/support-triage/scores?since=2026-11-28T00%3A00%3A00Z": {
    status: 200,
    body: {
      runs: 12,
      scores: [
        {
          step: "classify",
          scorer: "helpful",
          version: "1.2.0",
          arm: "economy",
          count: 9,
          mean: 0.71,
          p10: 0.5,
          p50: 0.7,
          p90: 0.9,
        },
        {
          step: "classify",
          scorer: "helpful",
          version: "1.2.0",
          arm: "quality",
          count: 3,
          mean: 0.9,
          p10: 0.85,
          p50: 0.9,
          p90: 0.95,
        },
      ],
      comparisons: [
        {
          step: "classify",
          scorer: "helpful",
          arm: "quality",
          control: "economy",
          diff: 0.19,
          ci95: [0.05, 0.33],
          significant: true,
        },
      ],
    },
  },
  "GET /": {
    status: 200,
    body: {
      workflows: [
        {
          name: "assistant",
          auth: "bearer",
          protocols: {
            chat: { base_url: "/v1", model: "assistant" },
            mcp: { url: "/mcp", tool: "assistant" },
            a2a: { url: "/a2a/assistant", agent_card: "/a2a/assistant/.well-known/agent-card.json" },
          },
        },
        { name: "greeter", auth: "none", protocols: { chat: null, mcp: null, a2a: null } },
      ],
    },
  },
  "POST /invoke/greeter": {
    status: 200,
    body: {
      run_id: "a".repeat(64),
      workflow: "greeter",
      status: "complete",
      error: null,
      steps: [
        {
          id: "greet",
          status: "complete",
          started_at: "2026-11-25T05:16:08.272Z",
          finished_at: "2026-11-25T05:16:08.275Z",
          error: null,
        },
      ],
      output: { result: { greeting: "Hello, Ada!" } },
      totals: { duration_ms: 3, cost_usd: 0 },
    },
  },
  [`POST /runs/${"d".repeat(64)}/compensate`]: { status: 202, body: { run_id: "d".repeat(64), retried: 2 } },
  [`GET /runs/${"d".repeat(64)}`]: {
    status: 200,
    body: {
      run_id: "d".repeat(64),
      workflow: "order-saga",
      status: "canceled",
      error: { code: "canceled", message: "the run was canceled", step: null },
      steps: [
        {
          id: "reserve",
          status: "complete",
          started_at: "2026-11-25T05:16:00.000Z",
          finished_at: "2026-11-25T05:16:00.030Z",
          error: null,
        },
      ],
      output: null,
      totals: { duration_ms: 30, cost_usd: 0 },
      compensation: {
        status: "failed",
        steps: [
          {
            step: "reserve",
            status: "failed",
            attempts: 10,
            error: {
              code: "webhook_failed",
              message: "DELETE https://w.example/r answered 503 after 10 attempts",
            },
            started_at: "2026-11-25T05:16:00.040Z",
            finished_at: "2026-11-25T05:20:00.000Z",
          },
        ],
      },
    },
  },
  "GET /runs?workflow=order-saga&compensation=failed": {
    status: 200,
    body: {
      runs: [
        {
          run_id: "e".repeat(64),
          workflow: "order-saga",
          status: "failed",
          created_at: "2026-11-25T05:16:00.000Z",
          finished_at: "2026-11-25T05:16:01.000Z",
          compensation: "failed",
        },
      ],
      next_cursor: null,
    },
  },
  "GET /runs?workflow=orders&search.customer=42&search.region=eu": {
    status: 200,
    body: {
      runs: [
        {
          run_id: "f".repeat(64),
          workflow: "orders",
          status: "complete",
          created_at: "2026-11-25T05:16:00.000Z",
          finished_at: "2026-11-25T05:16:01.000Z",
          compensation: null,
          search: { customer: "42", region: "eu" },
        },
      ],
      next_cursor: null,
    },
  },
  "POST /invoke/strict": {
    status: 422,
    body: {
      type: "urn:workflow-edge:problem:invalid_params",
      title: "Invalid params",
      status: 422,
      detail: "the body does not match strict's params.schema",
      code: "invalid_params",
      errors: [
        { path: "/name", message: "String is too short (0 < 1)." },
        { path: "", message: 'Instance does not have required property "age".' },
      ],
    },
  },
  [`POST /runs/${"b".repeat(64)}/rerun`]: {
    status: 409,
    body: {
      type: "urn:workflow-edge:problem:nothing_to_rerun",
      title: "Nothing to re-run",
      status: 409,
      detail: 'the run completed: name a step to re-run from ("from")',
      code: "nothing_to_rerun",
    },
  },
  "GET /runs?workflow=reindex": {
    status: 200,
    body: {
      runs: [
        {
          run_id: "c".repeat(64),
          status: "queued",
          created_at: "2026-11-25T05:16:08.000Z",
          finished_at: null,
        },
        {
          run_id: "d".repeat(64),
          status: "complete",
          created_at: "2026-11-25T05:16:00.000Z",
          finished_at: "2026-11-25T05:16:01.000Z",
        },
      ],
      next_cursor: null,
    },
  },
  [`GET /runs/${"c".repeat(64)}`]: {
    status: 200,
    body: {
      run_id: "c".repeat(64),
      workflow: "reindex",
      status: "queued",
      error: null,
      steps: [],
      coalesced: 3,
      queue: { reason: "debounce", starts_at: "2026-11-25T05:16:38.000Z" },
      totals: { duration_ms: 0, cost_usd: 0 },
    },
  },
  "GET /deliveries?workflow=alerts&state=failed": {
    status: 200,
    body: {
      deliveries: [
        {
          id: `msg_${"e".repeat(64)}_run.failed`,
          run_id: "e".repeat(64),
          workflow: "alerts",
          type: "run.failed",
          url: "https://alerts.example/***",
          state: "failed",
          attempts: [
            { at: "2026-11-24T09:00:00.000Z", status: 503, error: "http_503" },
            { at: "2026-11-25T12:00:00.000Z", status: null, error: "timeout" },
          ],
          next_attempt_at: null,
          created_at: "2026-11-24T09:00:00.000Z",
        },
      ],
      next_cursor: null,
    },
  },
  "GET /workflows/standup/schedules?from=2026-03-28T00%3A00%3A00Z&count=2": {
    status: 200,
    body: {
      schedules: [
        {
          cron: "30 9 * * *",
          timezone: "Europe/Berlin",
          next: ["2026-03-28T08:30:00.000Z", "2026-03-29T07:30:00.000Z"],
        },
      ],
    },
  },
  "POST /workflows/nightly/schedules/0/pause": {
    status: 200,
    body: { index: 0, cron: "0 6 * * *", timezone: "UTC", paused: true },
  },
  "POST /workflows/nightly/schedules/0/run": {
    status: 202,
    body: { run_id: "a".repeat(64), status: "accepted" },
  },
  "POST /workflows/nightly/schedules/0/backfill?from=2026-11-20T00%3A00%3A00Z&to=2026-11-22T00%3A00%3A00Z": {
    status: 200,
    body: {
      runs: [
        { at: "2026-11-20T06:00:00.000Z", run_id: "b".repeat(64), started: false },
        { at: "2026-11-21T06:00:00.000Z", run_id: "c".repeat(64), started: true },
      ],
    },
  },
  "POST /deliveries/recover?workflow=alerts&since=2026-11-24T00%3A00%3A00Z": {
    status: 200,
    body: { recovered: 12 },
  },
};

let server: Server;
let url = "";
const seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (req.url === "/invoke/streamer" && req.headers.accept === "text/event-stream") {
        // As the Worker streams a run (docs/http-api.md, "Streaming"), chunk by chunk.
        res.writeHead(200, { "content-type": "text/event-stream" });
        const events: Array<[string, unknown]> = [
          ["run.started", { run_id: "f".repeat(64), workflow: "streamer", trace_id: "0".repeat(32) }],
          ["output.delta", { step: "answer", text: "Hel" }],
          ["output.delta", { step: "answer", text: "lo, " }],
          ["output.delta", { step: "answer", text: "Ada!" }],
          [
            "run.completed",
            { run_id: "f".repeat(64), status: "complete", error: null, time: "2026-11-25T05:16:08.272Z" },
          ],
        ];
        events.forEach(([type, data], i) => {
          setTimeout(() => {
            res.write(
              `id: ${i + 1}\nevent: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`,
            );
            if (i === events.length - 1) res.end();
          }, i * 20);
        });
        return;
      }
      const answer = ANSWERS[`${req.method} ${req.url}`];
      if (answer) {
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(JSON.stringify(answer.body));
        return;
      }
      if (req.url?.startsWith("/runs/")) {
        res.writeHead(404, { "content-type": "application/problem+json" });
        res.end(
          JSON.stringify({
            type: "urn:workflow-edge:problem:run_not_found",
            title: "Run not found",
            status: 404,
            detail: "no run with this id",
            code: "run_not_found",
          }),
        );
        return;
      }
      res.writeHead(202, { "content-type": "application/json", location: "/runs/abc" });
      res.end(JSON.stringify({ run_id: "abc", status: "accepted" }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("usage errors", () => {
  it("exit 2 with a clear message: an unknown command, bad JSON in --data, a missing argument, an option of another command", async () => {
    const unknown = await cli(["launch"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('error: usage: unknown command "launch"');
    const bad = await cli(["invoke", "hello", "--data", "{name:"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: usage: --data is not valid JSON/);
    const missing = await cli(["runs", "get"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing run ID");
    const wrong = await cli(["invoke", "hello", "--workflow", "x"]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("invoke does not take --workflow");
    expect((await cli(["--nope"])).code).toBe(2);
  });

  it("prints the commands with --help and exits 0", async () => {
    const help = await cli(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("runs tail ID");
    expect(help.stdout).toContain("init NAME");
  });
});

describe("against an HTTP server", () => {
  it("renders an API error as error: <code>: <detail> and exits 1", async () => {
    const r = await cli(["runs", "get", "0".repeat(64), "--url", url]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe("error: run_not_found: no run with this id");
    expect(r.stdout).toBe("");
  });

  it("sends the token as a Bearer credential and --header values, reading the URL from the environment", async () => {
    const r = await cli(
      ["invoke", "hello", "--data", '{"name":"Ada"}', "--header", "X-Api-Key: k-123", "--json"],
      {
        env: { WORKFLOW_EDGE_URL: url, WORKFLOW_EDGE_TOKEN: "t-456" },
      },
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ run_id: "abc", status: "accepted" });
    const last = seen[seen.length - 1];
    expect(last?.url).toBe("/invoke/hello");
    expect(last?.headers.authorization).toBe("Bearer t-456");
    expect(last?.headers["x-api-key"]).toBe("k-123");
    expect(JSON.parse(last?.body ?? "")).toEqual({ name: "Ada" });
  });

  it("invoke --wait prints the run's output as compact JSON after its steps", async () => {
    const r = await cli(["invoke", "greeter", "--data", '{"name":"Ada"}', "--wait", "--url", url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([
      `greeter run ${"a".repeat(64)} complete`,
      "  greet  complete  3 ms  ",
      "  total 3 ms, cost $0.0000",
      '  output {"result":{"greeting":"Hello, Ada!"}}',
    ]);
  });

  it("runs list and runs get say why a queued run waits and when it is expected to start", async () => {
    const list = await cli(["runs", "list", "--workflow", "reindex", "--url", url]);
    expect(list.code, list.stderr).toBe(0);
    const [head, queued, done] = list.stdout.trim().split("\n");
    expect(head).toMatch(/^RUN +STATUS +CREATED +DURATION +WAITING$/);
    expect(queued).toContain("queued by debounce, expected to start 2026-11-25T05:16:38.000Z");
    expect(done).toMatch(/complete +2026-11-25T05:16:00.000Z +1.0 s\s*$/);
    const get = await cli(["runs", "get", "c".repeat(64), "--url", url]);
    expect(get.stdout).toContain("queued by debounce, expected to start 2026-11-25T05:16:38.000Z");
    expect(get.stdout).toContain("stands for 3 invokes");
  });

  it("runs compensate says how many failed compensations are tried again; runs list --compensation failed asks for those runs", async () => {
    const retried = await cli(["runs", "compensate", "d".repeat(64), "--url", url]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout.trim()).toBe(`retrying 2 failed compensations of run ${"d".repeat(64)}`);
    const list = await cli([
      "runs",
      "list",
      "--workflow",
      "order-saga",
      "--compensation",
      "failed",
      "--url",
      url,
    ]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("e".repeat(64));
  });

  it("runs list --search KEY=VALUE asks for the runs with those search values", async () => {
    const list = await cli([
      "runs",
      "list",
      "--workflow",
      "orders",
      "--search",
      "customer=42",
      "--search",
      "region=eu",
      "--url",
      url,
    ]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("f".repeat(64));
    const bad = await cli(["runs", "list", "--workflow", "orders", "--search", "customer", "--url", url]);
    expect(bad.code).toBe(2);
  });

  it("invoke --stream prints the answer as it is written, then the run's end, and sends the params", async () => {
    const r = await cli(["invoke", "streamer", "--stream", "--data", '{"name":"Ada"}', "--url", url]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe("Hello, Ada!");
    expect(lines[1]).toMatch(/run complete$/);
    const sent = seen.find((x) => x.url === "/invoke/streamer");
    expect(JSON.parse(sent?.body ?? "{}")).toEqual({ name: "Ada" });
  });

  it("deliveries list shows each failed delivery's attempts and last error; recover says how many", async () => {
    const list = await cli(["deliveries", "list", "--workflow", "alerts", "--state", "failed", "--url", url]);
    expect(list.code, list.stderr).toBe(0);
    const [head, row] = list.stdout.trim().split("\n");
    expect(head).toMatch(/^DELIVERY +TYPE +STATE +ATTEMPTS +LAST +NEXT$/);
    expect(row).toMatch(/^msg_e{64}_run\.failed +run\.failed +failed +2 +timeout/);
    const rec = await cli([
      "deliveries",
      "recover",
      "--workflow",
      "alerts",
      "--since",
      "2026-11-24T00:00:00Z",
      "--url",
      url,
    ]);
    expect(rec.stdout.trim()).toBe("recovered: 12 failed deliveries attempted again");
    const bad = await cli(["deliveries", "recover", "--workflow", "alerts", "--url", url]);
    expect(bad.code).toBe(2);
  });

  it("workflows prints how each workflow is called: its invoke URL and its protocols' base URLs, absolute", async () => {
    const r = await cli(["workflows", "--url", url]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.trimEnd()),
    ).toEqual([
      "WORKFLOW   AUTH    CALLED BY",
      `assistant  bearer  invoke ${url}/invoke/assistant`,
      `                   chat base URL ${url}/v1 model assistant`,
      `                   MCP ${url}/mcp tool assistant`,
      `                   A2A agent card ${url}/a2a/assistant/.well-known/agent-card.json`,
      `greeter    none    invoke ${url}/invoke/greeter`,
    ]);
  });

  it("scores prints each arm's count, mean and percentiles, and each arm against the first", async () => {
    const r = await cli(["scores", "support-triage", "--since", "2026-11-28T00:00:00Z", "--url", url]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.trimEnd()),
    ).toEqual(
      [
        "STEP      SCORER   VERSION  ARM      COUNT  MEAN  P10   P50   P90",
        "classify  helpful  1.2.0    economy  9      0.71  0.50  0.70  0.90",
        "classify  helpful  1.2.0    quality  3      0.90  0.85  0.90  0.95",
        "",
        "STEP      SCORER   ARM      AGAINST  DIFF   95 % INTERVAL  ",
        "classify  helpful  quality  economy  +0.19  [0.05, 0.33]   significant",
        "12 runs read",
      ].map((l) => l.trimEnd()),
    );
  });

  it("eval scores the tests' cases and exits 1 when a scorer's mean is below its minimum", async () => {
    const file = join(ROOT, "workflows/tests/support-triage.test.yaml");
    const met = await cli(["eval", file, "--min", "has_summary=0.9"]);
    expect(met.code, met.stderr).toBe(0);
    expect(met.stdout).toMatch(
      /pages on-call for an urgent ticket and posts the triage\s+classify\s+helpful\s+economy\s+0\.90/,
    );
    expect(met.stdout).toMatch(/does not page for a normal ticket\s+classify\s+helpful\s+economy\s+skipped/);
    const missed = await cli(["eval", file, "--min", "helpful=0.95"]);
    expect(missed.code).toBe(1);
    expect(missed.stdout).toMatch(/helpful\s+0\.90\s+1\s+0\.95\s+below the minimum/);
  });

  it("schedules shows each entry's next fire times in UTC and on the zone's own clock", async () => {
    const r = await cli([
      "schedules",
      "standup",
      "--from",
      "2026-03-28T00:00:00Z",
      "--count",
      "2",
      "--url",
      url,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.trimEnd()),
    ).toEqual([
      "CRON        TIMEZONE       NEXT (UTC)                LOCAL",
      "30 9 * * *  Europe/Berlin  2026-03-28T08:30:00.000Z  2026-03-28 09:30",
      "                           2026-03-29T07:30:00.000Z  2026-03-29 09:30",
    ]);
  });

  it("schedules run, pause and backfill an entry by its index", async () => {
    const paused = await cli(["schedules", "pause", "nightly", "0", "--url", url]);
    expect(paused.stdout.trim()).toBe("entry 0 of nightly: paused");
    const ran = await cli(["schedules", "run", "nightly", "0", "--url", url]);
    expect(ran.stdout.trim()).toBe(`started ${"a".repeat(64)}`);
    const filled = await cli([
      "schedules",
      "backfill",
      "nightly",
      "0",
      "--from",
      "2026-11-20T00:00:00Z",
      "--to",
      "2026-11-22T00:00:00Z",
      "--url",
      url,
    ]);
    expect(filled.code, filled.stderr).toBe(0);
    expect(filled.stdout.trim().split("\n")).toEqual([
      `2026-11-20T06:00:00.000Z  ${"b".repeat(64)}  already started`,
      `2026-11-21T06:00:00.000Z  ${"c".repeat(64)}  started`,
      "1 of 2 firing(s) started",
    ]);
    const missing = await cli([
      "schedules",
      "backfill",
      "nightly",
      "0",
      "--from",
      "2026-11-20T00:00:00Z",
      "--url",
      url,
    ]);
    expect(missing.code).toBe(2);
  });

  it("prints each of the problem's errors (where, and what to fix) on its own line under the error", async () => {
    const r = await cli(["invoke", "strict", "--data", '{"name":""}', "--url", url]);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n")).toEqual([
      "error: invalid_params: the body does not match strict's params.schema",
      "  /name: String is too short (0 < 1).",
      '  (the body): Instance does not have required property "age".',
      "",
    ]);
  });

  it("says to name --from when re-running a complete run", async () => {
    const r = await cli(["runs", "rerun", "b".repeat(64), "--url", url]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      "error: nothing_to_rerun: the run completed: name a step to re-run from (--from STEP)",
    );
  });

  it("says when the deployment does not answer", async () => {
    const r = await cli(["runs", "get", "x", "--url", "http://127.0.0.1:9"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: unreachable: /);
  });
});

describe("the project's scripts", () => {
  it("test FILE runs the cases of that file only, as npm run test:workflows FILE does", async () => {
    const r = await cli(["test", "workflows/tests/hello.test.yaml"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("workflows/tests/hello.test.yaml (hello)");
    expect(r.stdout).toMatch(/\d+ cases? in 1 file: \d+ passed, 0 failed/);
  });

  it("test FILE reads a relative FILE from the folder `npm run cli` was typed in", async () => {
    // npm runs the CLI in the package root and says where it was typed in INIT_CWD.
    const r = await cli(["test", "tests/hello.test.yaml"], { env: { INIT_CWD: join(ROOT, "workflows") } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("workflows/tests/hello.test.yaml (hello)");
  });
});

describe("init", () => {
  it("writes a workflow and its test that pass validate and test", async () => {
    const dir = mkdtempSync(join(tmpdir(), "workflow-edge-init-"));
    try {
      const r = await cli(["init", "greeter"], { cwd: dir });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("workflows/greeter.workflow.yaml");
      expect(readFileSync(join(dir, "workflows/tests/greeter.test.yaml"), "utf8")).toContain(
        "workflow: greeter",
      );
      const validate = spawnSync(
        process.execPath,
        [join(ROOT, "scripts/validate.ts"), join(dir, "workflows")],
        {
          encoding: "utf8",
        },
      );
      expect(validate.status, validate.stdout + validate.stderr).toBe(0);
      const test = spawnSync(
        process.execPath,
        [join(ROOT, "scripts/test-workflows.ts"), join(dir, "workflows/tests")],
        {
          encoding: "utf8",
        },
      );
      expect(test.status, test.stdout + test.stderr).toBe(0);
      expect(test.stdout).toContain("1 passed");
      // A second init of the same name refuses to overwrite.
      const again = await cli(["init", "greeter"], { cwd: dir });
      expect(again.code).toBe(1);
      expect(again.stderr).toContain("already exists");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
