/**
 * ktsu's tool servers, and other servers of protocol 2024-11-05, speak only the older HTTP+SSE
 * transport: answers arrive on one long-lived GET event stream, matched to the POSTs that asked
 * by id. It is the fallback when Streamable HTTP is refused, so those servers work unchanged.
 */

import type { Json, JsonObject } from "../bundle.ts";
import { nestsDeeperThan } from "../common/json-depth.ts";
import { readSse } from "../common/sse.ts";
import {
  type Channel,
  describe,
  MAX_MESSAGE_BYTES,
  McpError,
  type McpOptions,
  pick,
  timed,
} from "./channel.ts";

/** What the HTTP+SSE transport's servers speak. */
export const LEGACY_PROTOCOL_VERSION = "2024-11-05";

interface Waiter {
  resolve(message: unknown): void;
  reject(e: unknown): void;
}

export class SseChannel implements Channel {
  readonly transport = "sse" as const;
  private nextId = 1;
  private readonly waiters = new Map<number, Waiter>();
  private closed: Error | null = null;
  private readonly opts: McpOptions;
  private readonly stream: AbortController;
  private readonly endpoint: string;

  private constructor(opts: McpOptions, stream: AbortController, endpoint: string) {
    this.opts = opts;
    this.stream = stream;
    this.endpoint = endpoint;
  }

  /**
   * GETs the event stream and waits for its `endpoint` event. ktsu's server files give the
   * server's base URL and ktsu appends `/sse`: when the URL itself is not an event stream,
   * `<url>/sse` is tried too.
   */
  static async open(opts: McpOptions, signal: AbortSignal): Promise<SseChannel> {
    const candidates = [opts.url];
    if (!new URL(opts.url).pathname.endsWith("/sse")) candidates.push(`${opts.url.replace(/\/+$/, "")}/sse`);
    let last = "";
    for (const url of candidates) {
      const stream = new AbortController();
      const onStepAbort = () => stream.abort(signal.reason);
      signal.addEventListener("abort", onStepAbort, { once: true });
      // The stream outlives this request: only the wait for its headers is timed.
      const timer = setTimeout(() => stream.abort(new McpError("timeout")), Math.max(1, opts.timeoutMs));
      let res: Response;
      try {
        res = await opts.fetch(url, {
          method: "GET",
          headers: { ...opts.headers, accept: "text/event-stream" },
          redirect: "manual",
          signal: stream.signal,
        });
      } catch (e) {
        signal.removeEventListener("abort", onStepAbort);
        if (signal.aborted) throw signal.reason ?? e;
        if (stream.signal.aborted) {
          throw new McpError(`GET ${describe(url)}: no answer within ${Math.round(opts.timeoutMs / 1000)} s`);
        }
        throw new McpError(`GET ${describe(url)}: ${e instanceof Error ? e.message : String(e)}`);
      } finally {
        clearTimeout(timer);
      }
      const type = res.headers.get("content-type") ?? "";
      if (!res.ok || !type.includes("text/event-stream") || !res.body) {
        res.body?.cancel().catch(() => {});
        signal.removeEventListener("abort", onStepAbort);
        last = `GET ${describe(url)}: HTTP ${res.status}${res.ok ? ` (${type || "no content type"})` : ""}`;
        continue;
      }
      let announce: (endpoint: string) => void = () => {};
      let fail: (e: unknown) => void = () => {};
      const endpoint = new Promise<string>((resolve, reject) => {
        announce = resolve;
        fail = reject;
      });
      const holder: { channel: SseChannel | null } = { channel: null };
      // Read the stream for as long as the session lives: answers to our POSTs arrive here.
      (async () => {
        const tooLarge = () => new McpError(`event stream: an event is over ${MAX_MESSAGE_BYTES} bytes`);
        try {
          for await (const ev of readSse(
            res.body as ReadableStream<Uint8Array>,
            MAX_MESSAGE_BYTES,
            tooLarge,
          )) {
            if (ev.event === "endpoint") {
              const target = new URL(ev.data.trim(), url);
              // The official SDK's rule: messages go back to the origin the stream came from.
              if (target.origin !== new URL(url).origin) {
                throw new McpError("event stream: the endpoint is on another origin");
              }
              announce(target.href);
            } else if (ev.event === "message") {
              holder.channel?.dispatch(ev.data);
            }
          }
          throw new McpError("event stream: closed by the server");
        } catch (e) {
          const err =
            e instanceof McpError
              ? e
              : new McpError(`event stream: ${e instanceof Error ? e.message : String(e)}`);
          fail(err);
          holder.channel?.shutdown(err);
        } finally {
          signal.removeEventListener("abort", onStepAbort);
        }
      })();
      const target = await timed(signal, opts.timeoutMs, "endpoint event", (s) =>
        Promise.race([
          endpoint,
          new Promise<never>((_, reject) =>
            s.addEventListener("abort", () => reject(s.reason), { once: true }),
          ),
        ]),
      ).catch((e: unknown) => {
        stream.abort();
        throw e;
      });
      const channel = new SseChannel(opts, stream, target);
      holder.channel = channel;
      return channel;
    }
    throw new McpError(`neither Streamable HTTP nor HTTP+SSE answered at ${describe(opts.url)} (${last})`);
  }

  dispatch(data: string): void {
    // A message too deep to walk safely is dropped like one that is not JSON; its request times out.
    if (nestsDeeperThan(data)) return;
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    for (const m of Array.isArray(message) ? message : [message]) {
      const id = (m as { id?: unknown } | null)?.id;
      if (typeof id !== "number") continue;
      const w = this.waiters.get(id);
      if (w) {
        this.waiters.delete(id);
        w.resolve(m);
      }
    }
  }

  shutdown(err: Error): void {
    this.closed = err;
    for (const w of this.waiters.values()) w.reject(err);
    this.waiters.clear();
  }

  private async send(
    body: JsonObject,
    signal: AbortSignal,
    what: string,
    extra?: Record<string, string>,
  ): Promise<void> {
    const res = await this.opts.fetch(this.endpoint, {
      method: "POST",
      headers: { ...this.opts.headers, "content-type": "application/json", ...extra },
      body: JSON.stringify(body),
      redirect: "manual",
      signal,
    });
    res.body?.cancel().catch(() => {});
    if (!res.ok) throw new McpError(`${what}: HTTP ${res.status} from ${describe(this.endpoint)}`);
  }

  request(
    method: string,
    params: JsonObject | undefined,
    signal: AbortSignal,
    headers?: Record<string, string>,
  ): Promise<Json> {
    return timed(signal, this.opts.timeoutMs, method, async (s) => {
      if (this.closed) throw this.closed;
      const id = this.nextId++;
      const answer = new Promise<unknown>((resolve, reject) => {
        this.waiters.set(id, { resolve, reject });
        s.addEventListener(
          "abort",
          () => {
            this.waiters.delete(id);
            reject(s.reason);
          },
          { once: true },
        );
      });
      answer.catch(() => {}); // Observed below; a rejection before then must not be unhandled.
      await this.send({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, s, method, headers);
      const hit = pick(await answer, id, method);
      if (!hit.found) throw new McpError(`${method}: no result`);
      return hit.result;
    });
  }

  notify(method: string, params: JsonObject | undefined, signal: AbortSignal): Promise<void> {
    return timed(signal, this.opts.timeoutMs, method, (s) =>
      this.send({ jsonrpc: "2.0", method, ...(params ? { params } : {}) }, s, method),
    );
  }

  async close(): Promise<void> {
    this.shutdown(new McpError("the session is closed"));
    this.stream.abort();
  }
}
