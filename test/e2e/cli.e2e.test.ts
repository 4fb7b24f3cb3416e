/**
 * Every command of the CLI (docs/cli.md) against the real Worker under `wrangler dev`, run as a user
 * runs it (`node cli/bin.ts`, which is what the `workflow-edge` bin and `npm run cli` start):
 * exit statuses, human output, `--json` output parsed, and API errors on stderr.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run-cli.ts";
import { startWebhookTarget } from "../servers/webhook-target.ts";
import { poll } from "../support/poll.ts";
import { startWorker, type WorkerProcess } from "./worker-process.ts";

const TOKEN = "e2e-cli-token-0d5f1e";

let target: { port: number; close(): Promise<void> };
let worker: WorkerProcess;

beforeAll(async () => {
  target = await startWebhookTarget();
  worker = await startWorker({
    ALLOW_PRIVATE_WEBHOOKS: "true",
    TARGET_URL: `http://127.0.0.1:${target.port}`,
    E2E_SECRET: "e2e-secret-value-cli-1",
    E2E_TOKEN: TOKEN,
  });
});

afterAll(async () => {
  await worker?.stop();
  await target?.close();
});

const cli = (...args: string[]) => runCli(args, { env: { WORKFLOW_EDGE_URL: worker.url } });

const PIPELINE = JSON.stringify({ delay_ms: 50, settle_ms: 0, note: "cli" });

describe("workflow-edge against a Worker", () => {
  it("invoke --wait prints the run step by step and exits 0; a failed run exits 1", async () => {
    const ok = await cli("invoke", "e2e-pipeline", "--data", PIPELINE, "--wait", "30");
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/e2e-pipeline run [0-9a-f]{64} complete/);
    expect(ok.stdout).toMatch(/slow-call\s+complete\s+\d+ ms/);
    const bad = await cli("invoke", "e2e-failing", "--wait");
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("error webhook_failed at rejected");
  });

  it("invoke --json prints the API's answer and nothing else; runs get and runs list read it back", async () => {
    const accepted = await cli("--json", "invoke", "e2e-pipeline", "--data", PIPELINE);
    expect(accepted.code).toBe(0);
    const { run_id, status } = JSON.parse(accepted.stdout) as { run_id: string; status: string };
    expect(status).toBe("accepted");
    await poll(
      `runs get ${run_id} to say complete`,
      async () => JSON.parse((await cli("runs", "get", run_id, "--json")).stdout) as { status: string },
      (e) => e.status === "complete",
      { intervalMs: 100 },
    );
    const human = await cli("runs", "get", run_id);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`run ${run_id} complete`);
    await poll(
      `runs list to show ${run_id}`,
      async () =>
        JSON.parse((await cli("runs", "list", "--workflow", "e2e-pipeline", "--all", "--json")).stdout)
          .runs as Array<{
          run_id: string;
        }>,
      (runs) => runs.some((r) => r.run_id === run_id),
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const table = await cli("runs", "list", "--workflow", "e2e-pipeline", "--limit", "5");
    expect(table.stdout.split("\n")[0]).toMatch(/^RUN\s+STATUS\s+CREATED\s+DURATION$/);
  });

  it("runs tail follows the events live, one line each, and ends with the run's end", async () => {
    const accepted = await cli(
      "--json",
      "invoke",
      "e2e-pipeline",
      "--data",
      JSON.stringify({ delay_ms: 1200, settle_ms: 0, note: "tail" }),
    );
    const { run_id } = JSON.parse(accepted.stdout) as { run_id: string };
    const tail = await cli("runs", "tail", run_id);
    expect(tail.code).toBe(0);
    const lines = tail.stdout.trim().split("\n");
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.some((l) => /slow-call running/.test(l))).toBe(true);
    expect(lines[lines.length - 1]).toMatch(/run complete$/);
  });

  it("signal, cancel, rerun, approvals, approve and delete on a run that waits, with the workflow's token", async () => {
    const auth = ["--token", TOKEN];
    const started = await cli(...auth, "--json", "invoke", "e2e-waiting");
    const { run_id } = JSON.parse(started.stdout) as { run_id: string };
    const refused = await cli("runs", "get", run_id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: unauthorized: /);
    await poll(
      `${run_id}'s first step waiting`,
      async () => JSON.parse((await cli(...auth, "--json", "runs", "get", run_id)).stdout),
      (e) => e.steps[0].status === "waiting",
      { intervalMs: 100 },
    );
    const none = await cli(...auth, "approvals", run_id);
    expect(none.stdout.trim()).toBe("no approvals");
    const notThere = await cli(...auth, "approve", run_id, "apr_nope", "--comment", "ok");
    expect(notThere.code).toBe(1);
    expect(notThere.stderr).toMatch(/^error: approval_not_found: /);
    const sent = await cli(...auth, "signal", run_id, "go_ahead", "--data", '{"by":"cli"}');
    expect(sent.code).toBe(0);
    expect(sent.stdout.trim()).toBe("delivered to go-ahead");

    const second = JSON.parse((await cli(...auth, "--json", "invoke", "e2e-waiting")).stdout)
      .run_id as string;
    const canceled = await cli(...auth, "runs", "cancel", second);
    expect(canceled.stdout.trim()).toBe(`canceled: run ${second}`);
    const rerun = await cli(...auth, "--json", "runs", "rerun", second);
    expect(rerun.code).toBe(0);
    const again = JSON.parse(rerun.stdout) as { run_id: string; rerun_of: string };
    expect(again.rerun_of).toBe(second);
    await cli(...auth, "runs", "cancel", again.run_id);
    const deleted = await cli(...auth, "runs", "delete", second);
    expect(deleted.stdout.trim()).toBe("deleted");
    const gone = await cli(...auth, "runs", "get", second);
    expect(gone.code).toBe(1);
    expect(gone.stderr.trim()).toBe("error: run_not_found: no run with this id");
  });

  it("validate and test run the project's npm scripts and pass their exit status on", async () => {
    const validate = await cli("validate");
    expect(validate.code, validate.stderr).toBe(0);
    const test = await cli("test");
    expect(test.code, test.stderr).toBe(0);
  });
});
