/**
 * Secret leaks: for every path a secret value can take through a run — a webhook target echoing
 * it (query, headers, body), a model echoing a prompt that holds it, error messages, a
 * sub-workflow's output, the caller's own params, a 422 that quotes the body — the secret
 * appears in no envelope, no error body, no event on GET /runs/{id}/events and no console
 * output, in none of the forms the docs name (as is, base64, base64url, URL-encoded, JSON-escaped).
 * Each test first checks that the secret really went where the workflow sends it, so "not found"
 * means masked, not "never there".
 */

import { env, runInDurableObject } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { poll } from "../support/poll.ts";
import {
  call,
  invoke,
  type LoggedRequest,
  run,
  targetLog,
  uniqueKey,
  waitForRun,
} from "../worker/harness.ts";
import { runStub } from "./run-helpers.ts";

const bindings = env as unknown as Record<string, string>;
const WEBHOOK_SECRET = bindings.WEBHOOK_SECRET as string;
/** Has a space, `/`, `+`, `&`, `"`, `=` and a non-ASCII letter: every encoding changes it. */
const LEAK_SECRET = bindings.LEAK_SECRET as string;
const SECRETS = [WEBHOOK_SECRET, LEAK_SECRET];

function utf8Base64(s: string): string {
  let binary = "";
  for (const b of new TextEncoder().encode(s)) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Every form the docs say is masked. */
function forms(secret: string): string[] {
  const b64 = utf8Base64(secret);
  const b64url = b64.replaceAll("+", "-").replaceAll("/", "_");
  const jsonEscaped = JSON.stringify(secret).slice(1, -1);
  return [
    secret,
    b64,
    b64.replace(/=+$/, ""),
    b64url,
    b64url.replace(/=+$/, ""),
    encodeURIComponent(secret),
    jsonEscaped,
    JSON.stringify(jsonEscaped).slice(1, -1),
  ];
}

/** The decoded query the target received (its log records it; the harness type leaves it out). */
function queryOf(r: LoggedRequest | undefined): Record<string, string> {
  return (r as unknown as { query?: Record<string, string> } | undefined)?.query ?? {};
}

function expectNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) {
    for (const form of forms(secret)) {
      expect(text.includes(form), `${where} holds a form of a secret: ${JSON.stringify(form)}`).toBe(false);
    }
  }
}

/** The run as every reader sees it: the envelope twice, its graph, its events, the listing. */
async function expectRunClean(runId: string, workflow: string): Promise<void> {
  for (const path of [`/runs/${runId}`, `/runs/${runId}/envelope`, `/runs/${runId}/graph`]) {
    const res = await call(path);
    expect(res.status).toBe(200);
    expectNoSecret(await res.text(), path);
  }
  const events = await call(`/runs/${runId}/events`);
  expect(events.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const text = await events.text();
  expect(text).toContain("run.completed");
  expectNoSecret(text, "events");
  const list = await call(`/runs?workflow=${workflow}`);
  expectNoSecret(await list.text(), "run listing");
}

// ---- console ---------------------------------------------------------------------------------

const consoleMethods = ["log", "info", "warn", "error", "debug"] as const;
const spies: MockInstance[] = [];
const printed: string[] = [];

beforeAll(() => {
  for (const m of consoleMethods) {
    spies.push(
      vi.spyOn(console, m).mockImplementation((...args: unknown[]) => {
        printed.push(args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" "));
      }),
    );
  }
});

afterAll(() => {
  for (const s of spies) s.mockRestore();
});

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

// ---- paths -----------------------------------------------------------------------------------

describe("a webhook target echoing the secrets", () => {
  it("receives them in query, headers and body, while the run records only ***", async () => {
    const key = uniqueKey("leak-webhook");
    const e = await run("rel-leak-webhook", { key });
    expect(e.status).toBe("complete");
    const [sent] = await targetLog(key);
    expect(queryOf(sent).token).toBe(LEAK_SECRET);
    expect(sent?.headers.authorization).toBe(`Bearer ${WEBHOOK_SECRET}`);
    expect(JSON.parse(sent?.body ?? "{}").token).toBe(LEAK_SECRET);

    expectNoSecret(JSON.stringify(e), "envelope");
    const echoed = e.steps[0].output.body;
    expect(echoed.query).toEqual({ token: "***", plain: "***" });
    expect(echoed.headers.authorization).toBe("Bearer ***");
    expect(echoed.body.sentence).toBe("the key is ***, keep it");
    expect(e.output.result).toEqual(echoed);
    await expectRunClean(e.run_id, "rel-leak-webhook");
  });

  it("keeps live events clean while the run is still going", async () => {
    const key = uniqueKey("leak-live");
    const res = await invoke("rel-leak-live", { key });
    const { run_id } = (await res.json()) as { run_id: string };
    const events = await call(`/runs/${run_id}/events`);
    const openedAt = Date.now();
    const text = await events.text();
    // Read live: the stream opened before the run ended, and the echo it carried held the secrets
    // (sent, echoed, and shown masked).
    const e = await waitForRun(run_id);
    expect(Date.parse(e.finished_at)).toBeGreaterThan(openedAt);
    const [sent] = await targetLog(key);
    expect(sent?.headers.authorization).toBe(`Bearer ${WEBHOOK_SECRET}`);
    expect(text).toContain("Bearer ***");
    expect(text).toContain("the key is ***, keep it");
    expectNoSecret(text, "live events");
  });
});

describe("a model echoing a prompt that holds a secret", () => {
  it("records the reply with the secret masked, and the caller's encoded copy too", async () => {
    const e = await run("rel-leak-agent", { note: `b64 ${utf8Base64(LEAK_SECRET)}` });
    expect(e.status).toBe("complete");
    expect(e.steps[0].output.text).toBe("Repeat after me: *** and b64 ***");
    expect(e.params).toEqual({ note: "b64 ***" });
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-agent");
  });
});

describe("errors that could quote a secret", () => {
  it("names a failing webhook URL without the secret in its query", async () => {
    const key = uniqueKey("leak-error");
    const e = await run("rel-leak-error", { key });
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("webhook_failed");
    expect(queryOf((await targetLog(key))[0]).token).toBe(LEAK_SECRET);
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-error");
  });

  it("masks a secret in an output.schema mismatch that names the offending property", async () => {
    const e = await run("rel-leak-schema", {});
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("output_schema_mismatch");
    expect(e.error.message).toContain("***");
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-schema");
  });

  it("keeps an expression error over a secret value clean", async () => {
    const e = await run("rel-leak-expression", {});
    expect(e.status).toBe("failed");
    expect(e.error.code).toBe("expression_error");
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-expression");
  });

  it("does not echo a secret the caller sent as a property name in a 422", async () => {
    const body = { [WEBHOOK_SECRET]: 1, code: LEAK_SECRET };
    const res = await invoke("rel-leak-params", body);
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(JSON.parse(text).code).toBe("invalid_params");
    expectNoSecret(text, "422 body");
  });
});

describe("a secret passed to a sub-workflow", () => {
  it("is masked in the child's step records and in the parent's output", async () => {
    const e = await run("rel-leak-sub", {});
    expect(e.status).toBe("complete");
    const child = e.steps[0];
    expect(child.steps[0].output.result).toEqual({
      text: "***",
      other: "prefix ***",
      both: "*** prefix ***",
    });
    expect(e.output).toEqual(child.steps[0].output);
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-sub");
  });
});

describe("params that hold a secret", () => {
  it("are masked in every encoding, in the params and in the output that copies them", async () => {
    const b64 = utf8Base64(LEAK_SECRET);
    const params = {
      plain: `x ${LEAK_SECRET} y`,
      base64: b64,
      base64url: b64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""),
      url: `https://example.test/?t=${encodeURIComponent(LEAK_SECRET)}`,
      json: JSON.stringify({ token: LEAK_SECRET }),
      other: `Basic ${btoa(`user:${WEBHOOK_SECRET}`)}`,
    };
    const e = await run("rel-leak-params", params);
    expect(e.status).toBe("complete");
    expect(e.params.plain).toBe("x *** y");
    expect(e.params.url).toBe("https://example.test/?t=***");
    expect(e.params.json).toBe('{"token":"***"}');
    expectNoSecret(JSON.stringify(e), "envelope");
    await expectRunClean(e.run_id, "rel-leak-params");
  });
});

describe("console output", () => {
  it("reaches the spy from inside a run's Durable Object (the spy sees what runs print)", async () => {
    const e = await run("rel-open", {});
    await runInDurableObject(runStub(e.run_id), () => console.log("probe-from-durable-object"));
    expect(printed).toContain("probe-from-durable-object");
  });

  it("holds no secret from runs that sent, echoed, failed on and were given secrets", async () => {
    const runs = [
      await run("rel-leak-webhook", { key: uniqueKey("leak-console") }),
      await run("rel-leak-error", { key: uniqueKey("leak-console-error") }),
      await run("rel-leak-params", { plain: `x ${LEAK_SECRET} y` }),
    ];
    // The spy saw each run's own line: what those runs printed is what is searched.
    await poll(
      "each run's log line",
      () => printed.join("\n"),
      (text) => runs.every((e) => text.includes(e.run_id)),
    );
    expectNoSecret(printed.join("\n"), "console output");
  });
});
