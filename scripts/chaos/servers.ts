/**
 * What the chaos run's Worker talks to (docs/operations.md, "Chaos"), on 127.0.0.1, failing at
 * random while the load runs: the receiver of webhook steps, compensations and notifications, the
 * fake model provider (OpenAI's chat completions, streamed or not) and an OTLP collector. Every
 * request is recorded as it arrived (what the invariants read); the faults are drawn from the
 * run's seed: a connection reset before any answer, a hang past the caller's timeout, a 5xx, a
 * stream cut halfway. `calm()` stops the faults for the drain after the load.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Prng } from "./prng.ts";

/** One request the receiver took. */
export interface Received {
  path: string;
  /** The `idempotency-key` header (null: none). */
  key: string | null;
  /** SHA-256 of the body. */
  body: string;
  text: string;
  /** What it answered (0: nothing, a fault). */
  status: number;
  at: number;
}

export interface ChaosServers {
  url: string;
  received: Received[];
  /** Bodies the collector took (OTLP JSON). */
  spans: string[];
  /** Requests the provider answered, and how (`ok`, or the fault). */
  modelCalls: string[];
  faults: Record<string, number>;
  /** No more faults: every request is answered as it should be. */
  calm(): void;
  close(): Promise<void>;
}

/** How often each fault strikes a request while the load runs. */
const FAULT_RATES = { reset: 0.06, hang: 0.03, error: 0.08, cut: 0.15 };
/** A hang lasts past every step's `timeout_s` in the chaos workflows (then the socket is closed). */
const HANG_MS = 12_000;

export async function startChaosServers(prng: Prng): Promise<ChaosServers> {
  const received: Received[] = [];
  const spans: string[] = [];
  const modelCalls: string[] = [];
  const faults: Record<string, number> = { reset: 0, hang: 0, error: 0, cut: 0 };
  let calm = false;
  const hanging = new Set<ServerResponse>();
  const fault = (): "reset" | "hang" | "error" | null => {
    if (calm) return null;
    const r = prng.next();
    if (r < FAULT_RATES.reset) return "reset";
    if (r < FAULT_RATES.reset + FAULT_RATES.hang) return "hang";
    if (r < FAULT_RATES.reset + FAULT_RATES.hang + FAULT_RATES.error) return "error";
    return null;
  };
  const strike = (res: ServerResponse, kind: "reset" | "hang" | "error"): number => {
    faults[kind] = (faults[kind] ?? 0) + 1;
    if (kind === "reset") res.socket?.destroy();
    else if (kind === "hang") {
      hanging.add(res);
      setTimeout(() => {
        hanging.delete(res);
        res.socket?.destroy();
      }, HANG_MS).unref();
    } else res.writeHead(503, { "content-type": "application/json" }).end('{"error":"chaos"}');
    return kind === "error" ? 503 : 0;
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/v1/traces") {
        spans.push(text);
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        return;
      }
      if (path === "/v1/chat/completions") {
        model(req, res, text);
        return;
      }
      receive(req, res, path, text);
    });
  });

  function receive(req: IncomingMessage, res: ServerResponse, path: string, text: string): void {
    const record: Received = {
      path: req.url ?? path,
      key: (req.headers["idempotency-key"] as string | undefined) ?? null,
      body: createHash("sha256").update(text).digest("hex"),
      text,
      status: 0,
      at: Date.now(),
    };
    received.push(record);
    // A step made to fail (a saga's last step): refused, never retried.
    if (path.startsWith("/fail")) {
      record.status = 400;
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":"refused"}');
      return;
    }
    const f = fault();
    if (f) {
      record.status = strike(res, f);
      return;
    }
    record.status = 200;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, path }));
  }

  function model(_req: IncomingMessage, res: ServerResponse, text: string): void {
    let body: { stream?: boolean; model?: string } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // A malformed request: answered as a provider would.
    }
    const f = fault();
    if (f) {
      modelCalls.push(f);
      strike(res, f);
      return;
    }
    const reply = "Steady as she goes: the chaos run's answer, streamed in pieces.";
    const usage = { prompt_tokens: 12, completion_tokens: 14, total_tokens: 26 };
    if (body.stream !== true) {
      modelCalls.push("ok");
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: "chaos",
          object: "chat.completion",
          model: body.model ?? "chaos",
          choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
          usage,
        }),
      );
      return;
    }
    // A stream cut halfway: the first half goes out, then the connection is dropped.
    const cut = !calm && prng.next() < FAULT_RATES.cut;
    modelCalls.push(cut ? "cut" : "ok");
    if (cut) faults.cut = (faults.cut ?? 0) + 1;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const pieces = reply.match(/.{1,8}/g) ?? [reply];
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id: "chaos", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    let i = 0;
    res.write(chunk({ role: "assistant", content: "" }, null));
    const next = () => {
      if (res.destroyed) return;
      if (cut && i >= pieces.length / 2) {
        res.socket?.destroy();
        return;
      }
      if (i < pieces.length) {
        res.write(chunk({ content: pieces[i++] }, null));
        setTimeout(next, 5);
        return;
      }
      res.write(chunk({}, "stop"));
      res.write(
        `data: ${JSON.stringify({ id: "chaos", object: "chat.completion.chunk", choices: [], usage })}\n\n`,
      );
      res.end("data: [DONE]\n\n");
    };
    setTimeout(next, 5);
  }

  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    spans,
    modelCalls,
    faults,
    calm: () => {
      calm = true;
    },
    close: async () => {
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
