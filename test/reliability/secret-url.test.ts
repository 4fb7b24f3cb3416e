/**
 * A secret that is a whole URL, its token in the path and a query after it (as Discord's webhook
 * URLs are): what the engine writes about it (docs/file-format.md, "Env and secrets") shows the
 * URL's origin only, never the path that a message dropping the query would still hold. One test
 * per place a message leaves the engine: the run's and the step's error in the envelope, the
 * events, the log line, the spans, the deliveries. Each first proves the request really went to
 * the secret URL and failed there, so "not found" means not written, not never there.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import type { CollectedSpan } from "../servers/otlp-types.ts";
import { poll } from "../support/poll.ts";
import { call, type Envelope, run, targetLog, uniqueKey } from "../worker/harness.ts";

const vars = env as unknown as Record<string, string>;
const SECRET_URL = vars.SECRET_HOOK_URL as string;
const ORIGIN = new URL(SECRET_URL).origin;
/** What a message may show of the secret URL. */
const SHOWN = `${ORIGIN}/…`;
/** Pieces of the secret a message that drops the query would still hold. */
const PIECES = ["hooktok-5f2e8d1c9b7a", "/api/webhooks/1234", "webhooks/1234"];

function expectNoPiece(text: string, where: string): void {
  for (const piece of PIECES) expect(text.includes(piece), `${where} holds ${piece}`).toBe(false);
}

const printed: string[] = [];
const spies: MockInstance[] = [];
beforeAll(() => {
  for (const m of ["log", "info", "warn", "error"] as const) {
    spies.push(
      vi.spyOn(console, m).mockImplementation((...args: unknown[]) => {
        printed.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
      }),
    );
  }
});
afterAll(() => {
  for (const s of spies) s.mockRestore();
});

let failed: Envelope;
let key: string;
beforeAll(async () => {
  key = uniqueKey("secret-url");
  failed = await run("rel-leak-url", { key });
  // The request went to the secret URL, path and query as written, and was answered 404.
  const [sent] = await targetLog(key);
  expect(sent?.path).toBe("/api/webhooks/1234/hooktok-5f2e8d1c9b7a");
  expect(failed.status).toBe("failed");
});

describe("a webhook whose url is a secret with its token in the path", () => {
  it("fails with an error naming the URL's origin only, on the run and on the step", () => {
    expect(failed.error.code).toBe("webhook_failed");
    expect(failed.error.message).toBe(`POST ${SHOWN} answered 404 after 1 attempt`);
    expect(failed.steps[0].error.message).toBe(failed.error.message);
    expectNoPiece(JSON.stringify(failed), "envelope");
  });

  it("writes no piece of it in the run's events", async () => {
    const text = await (await call(`/runs/${failed.run_id}/events`)).text();
    expect(text).toContain(SHOWN);
    expectNoPiece(text, "events");
  });

  it("writes no piece of it in the run's log line, nor in any other line printed", async () => {
    const line = await poll(
      "the run's log line",
      () => printed.find((l) => l.includes(failed.run_id) && l.includes("run.finished")),
      (l) => l !== undefined,
    );
    expect(JSON.parse(line as string)).toMatchObject({ error_code: "webhook_failed", error_step: "post" });
    expectNoPiece(printed.join("\n"), "console");
  });

  it("exports spans that show the URL's origin only", async () => {
    const collector = vars.OTEL_EXPORTER_OTLP_ENDPOINT as string;
    const { spans } = await poll(
      "the run's root span",
      async () =>
        (await fetch(`${collector}/traces/${failed.trace_id}`)).json() as Promise<{ spans: CollectedSpan[] }>,
      (c) => c.spans.some((s) => s.name === "workflow rel-leak-url"),
    );
    const client = spans.filter((s) => s.name === "POST");
    expect(client.length).toBeGreaterThan(0);
    for (const s of client) {
      expect(s.attributes.find((a) => a.key === "url.full")?.value).toEqual({ stringValue: SHOWN });
    }
    expectNoPiece(JSON.stringify(spans), "spans");
  });

  it("lists its failed-run notification with the URL's origin only", async () => {
    const { deliveries } = await poll(
      "the notification's first attempt",
      async () =>
        (await call(`/runs/${failed.run_id}/deliveries`)).json() as Promise<{
          deliveries: Array<{
            url: string;
            attempts: Array<{ status: number | null; error: string | null }>;
          }>;
        }>,
      (d) => (d.deliveries[0]?.attempts.length ?? 0) > 0,
    );
    expect(deliveries[0]?.url).toBe(SHOWN);
    expect(deliveries[0]?.attempts[0]).toMatchObject({ status: 404, error: "http_404" });
    expectNoPiece(JSON.stringify(deliveries), "deliveries");
  });
});
