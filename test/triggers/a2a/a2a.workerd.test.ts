/**
 * Workflows as A2A 1.0 agents (docs/a2a.md) through the maintained client, `@a2a-js/sdk` 1.3.0,
 * pointed at the Worker as another agent would be: the Agent Card, tasks that complete, ask for an
 * approval or a signal and are answered through A2A, stream, are listed, canceled and followed;
 * then what a hand-written request gets wrong.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { describe, expect, it } from "vitest";
import { poll } from "../../support/poll.ts";
import { call, TARGET, TOKEN, targetLog, uniqueKey, waitForRun } from "../../worker/harness.ts";

const auth = { authorization: `Bearer ${TOKEN}` };

/** The Worker, as the client's fetch (every request carries `headers`). */
function fetchWith(headers: Record<string, string>) {
  return (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const merged = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    for (const [k, v] of Object.entries(headers)) merged.set(k, v);
    return call(url.pathname + url.search, {
      ...init,
      method: init?.method ?? (input instanceof Request ? input.method : "GET"),
      headers: merged,
    });
  };
}

async function agent(name: string, headers: Record<string, string> = {}): Promise<Client> {
  const fetchImpl = fetchWith(headers) as typeof fetch;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl("http://workflow.test", `/a2a/${name}/.well-known/agent-card.json`);
}

// biome-ignore lint/suspicious/noExplicitAny: protocol JSON is checked field by field
type Wire = any;

const message = (parts: Wire[], extra: Wire = {}) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts, ...extra },
});

/** A task (or the client's result) as A2A's JSON. */
const json = (t: unknown): Wire => Task.toJSON(t as Task);

/** `SendMessage` with A2A's JSON, through the SDK's own types; the Task as JSON. */
async function send(client: Client, params: Wire): Promise<Wire> {
  const result = await client.sendMessage(SendMessageRequest.fromJSON(params));
  expect("messageId" in (result as object)).toBe(false);
  return json(result);
}

function rpc(name: string, body: Wire, headers: Record<string, string> = {}) {
  return call(`/a2a/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0", ...auth, ...headers },
    body: JSON.stringify(body),
  });
}

describe("the Agent Card", () => {
  it("says who the agent is, where it answers, its skill and how to authenticate", async () => {
    const res = await call("/a2a/a2a-ten/.well-known/agent-card.json");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      name: "a2a-ten",
      description: "Counts to ten, then says what it was asked.",
      version: "2.1.0",
      supportedInterfaces: [
        { url: "http://workflow.test/a2a/a2a-ten", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      ],
      capabilities: { streaming: true, pushNotifications: true },
      defaultInputModes: ["text/plain", "application/json"],
      defaultOutputModes: ["text/plain", "application/json"],
      skills: [
        {
          id: "a2a-ten",
          name: "Counting",
          description: "Counts to ten, then says what it was asked.",
          tags: ["count", "demo"],
          examples: ["count for me"],
        },
      ],
      securitySchemes: { workflow: { httpAuthSecurityScheme: { scheme: "Bearer" } } },
      securityRequirements: [{ schemes: { workflow: { list: [] } } }],
    });
  });

  it("is 404 workflow_not_found for a workflow that is no agent, as is its endpoint", async () => {
    for (const res of [
      await call("/a2a/basic/.well-known/agent-card.json"),
      await rpc("basic", { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
    ]) {
      expect(res.status).toBe(404);
      expect(((await res.json()) as Wire).code).toBe("workflow_not_found");
    }
  });
});

describe("a task", () => {
  it("runs the workflow and completes with its output as the artifact, in a context of its own", async () => {
    const client = await agent("a2a-ten", auth);
    const task = await send(client, message([{ text: "how far can you count?" }]));
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts).toEqual([
      {
        artifactId: "output",
        name: "output",
        parts: [{ data: { result: { asked: "how far can you count?" } } }],
      },
    ]);
    expect(task.contextId).toMatch(/^[0-9a-f-]{36}$/);
    expect(task.history?.[0]?.parts).toEqual([{ text: "how far can you count?" }]);
    const envelope = await waitForRun(task.id, auth);
    expect(envelope).toMatchObject({
      status: "complete",
      workflow: "a2a-ten",
      params: { question: "how far can you count?" },
    });
    expect(json(await client.getTask({ id: task.id, historyLength: 0 } as Wire))).toMatchObject({
      id: task.id,
      contextId: task.contextId,
    });
  });

  it("answers at once with returnImmediately, and a retried message reaches the same task", async () => {
    const client = await agent("a2a-signal");
    const params = message([{ data: { customer: "c-1" } }], {});
    const first = await send(client, { ...params, configuration: { returnImmediately: true } });
    expect(["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"]).toContain(
      first.status.state,
    );
    const again = await send(client, { ...params, configuration: { returnImmediately: true } });
    expect(again.id).toBe(first.id);
    await client.cancelTask({ id: first.id } as Wire);
  });

  it("asks for a signal with its schema, refuses data that breaks it, and completes with the data that fits", async () => {
    const client = await agent("a2a-signal");
    const task = await send(client, message([{ data: { customer: "c-7" } }]));
    expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(task.status.message.parts).toEqual([
      { text: "step details waits for the signal details: answer with a data part, its payload" },
      {
        data: {
          signal: "details",
          schema: { type: "object", required: ["order_id"], properties: { order_id: { type: "string" } } },
        },
      },
    ]);
    const wrong = await send(client, message([{ data: { order: 1 } }], { taskId: task.id })).catch((e) => e);
    expect(wrong.name).toBe("RequestMalformedError");
    expect(wrong.data[0].fieldViolations).toEqual([
      { field: "message.parts.data", description: 'Instance does not have required property "order_id".' },
    ]);
    const done = await send(
      client,
      message([{ data: { order_id: "A-17" } }], { taskId: task.id, contextId: task.contextId }),
    );
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts[0].parts[0].data).toEqual({ result: { customer: "c-7", order_id: "A-17" } });
    const late = await send(client, message([{ data: { order_id: "A-18" } }], { taskId: task.id })).catch(
      (e) => e,
    );
    expect(late.name).toBe("UnsupportedOperationError");
  });

  it("asks for an approval, and an approval given through A2A lets it complete", async () => {
    const client = await agent("a2a-approve");
    const reply = JSON.stringify({ title: "Refund twice charged", priority: "high", ktsu_needs_human: true });
    const task = await send(client, message([{ text: `REPLY=${reply}` }]));
    expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const approval = task.status.message.parts[1].data.approval;
    expect(approval).toMatchObject({
      step: "summary",
      kind: "needs_human",
      arguments: { title: "Refund twice charged", priority: "high" },
    });
    const done = await send(
      client,
      message([{ data: { approve: true, comment: "fine" } }], { taskId: task.id }),
    );
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts[0].parts[0].data).toEqual({ title: "Refund twice charged", priority: "high" });
    const approvals = (await (await call(`/runs/${task.id}/approvals`)).json()) as Wire;
    expect(approvals.approvals[0]).toMatchObject({ id: approval.id, status: "approved", comment: "fine" });
  });

  it("streams: the task first, its states, the model's text as artifact chunks, the output, then the end", async () => {
    const client = await agent("a2a-stream");
    const text = "CHUNK_MS=20 streamed through A2A, four characters at a time";
    const events: Wire[] = [];
    for await (const ev of client.sendMessageStream(SendMessageRequest.fromJSON(message([{ text }]))))
      events.push(StreamResponse.toJSON(ev));
    const kinds = events.map((e) => Object.keys(e)[0]);
    expect(kinds[0]).toBe("task");
    const chunks = events
      .filter((e) => e.artifactUpdate?.artifact.artifactId === "output.delta")
      .map((e) => e.artifactUpdate);
    expect(chunks.length).toBeGreaterThan(5);
    // (The SDK's JSON leaves out a false `append`.)
    expect(chunks[0].append ?? false).toBe(false);
    expect(chunks.slice(1).every((c: Wire) => c.append === true)).toBe(true);
    expect(chunks.map((c: Wire) => c.artifact.parts[0].text).join("")).toBe(text);
    const output = events.find((e) => e.artifactUpdate?.artifact.artifactId === "output");
    expect(output.artifactUpdate.lastChunk).toBe(true);
    const last = events.at(-1);
    expect(last.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(events.indexOf(output)).toBeLessThan(events.length - 1);
  });

  it("is listed by its context, canceled once, and cannot be followed once it has ended", async () => {
    const client = await agent("a2a-signal");
    const contextId = `ctx-${crypto.randomUUID()}`;
    const task = await send(client, message([{ data: { customer: "c-9" } }], { contextId }));
    const listed = await poll(
      "the task in ListTasks",
      async () =>
        ListTasksResponse.toJSON(
          await client.listTasks(ListTasksRequest.fromJSON({ contextId, pageSize: 10 })),
        ) as Wire,
      (l) => (l.tasks ?? []).length === 1,
    );
    expect(listed.tasks[0].id).toBe(task.id);
    expect(listed.nextPageToken ?? "").toBe("");
    const following: Wire[] = [];
    for await (const ev of client.resubscribeTask({ id: task.id } as Wire)) following.push(ev);
    expect(following).toHaveLength(1);
    const canceled = json(await client.cancelTask({ id: task.id } as Wire));
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    const again = await client.cancelTask({ id: task.id } as Wire).catch((e) => e);
    expect(again.name).toBe("TaskNotCancelableError");
    const gone = await (async () => {
      for await (const _ of client.resubscribeTask({ id: task.id } as Wire)) return null;
    })().catch((e) => e);
    expect(gone.name).toBe("UnsupportedOperationError");
    const unknown = await client.getTask({ id: "f".repeat(64) } as Wire).catch((e) => e);
    expect(unknown.name).toBe("TaskNotFoundError");
  });
});

describe("push notifications", () => {
  it("delivers every state change in order, after a receiver that was down for a while", async () => {
    const client = await agent("a2a-signal");
    const key = uniqueKey("a2a-push");
    const task = await send(client, message([{ data: { customer: "c-push" } }], {}));
    const config = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId: task.id,
        url: `${TARGET}/retry-after/1?key=${key}`,
        token: "notify-token-123",
        authentication: { scheme: "Bearer", credentials: "receiver-credential-456" },
      }),
    );
    expect((config as Wire).id).toBeTruthy();
    await send(client, message([{ data: { order_id: "P-1" } }], { taskId: task.id }));
    const delivered = await poll(
      "the completed state at the receiver",
      async () => (await targetLog(key)).filter((r) => r.headers["x-a2a-notification-token"] !== undefined),
      (log) => log.some((r) => r.body.includes("TASK_STATE_COMPLETED") && r.body.includes("statusUpdate")),
      { timeoutMs: 20_000 },
    );
    // The first attempt was refused (429, Retry-After: 1); it came again, then the rest, in order.
    const ok = delivered.slice(1);
    const states = ok
      .map((r) => JSON.parse(r.body) as Wire)
      .map((b) => b.statusUpdate?.status.state ?? "artifact");
    expect(states).toEqual([
      "TASK_STATE_INPUT_REQUIRED",
      "TASK_STATE_WORKING",
      "artifact",
      "TASK_STATE_COMPLETED",
    ]);
    expect(delivered[0]?.body).toBe(delivered[1]?.body);
    for (const r of delivered) {
      expect(r.headers.authorization).toBe("Bearer receiver-credential-456");
      expect(r.headers["content-type"]).toBe("application/a2a+json");
    }
    const deliveries = (await (await call("/deliveries?workflow=a2a-signal&limit=100")).json()) as Wire;
    expect(
      deliveries.deliveries.filter((d: Wire) => d.run_id === task.id && d.type === "a2a.push").length,
    ).toBe(4);
  });

  it("keeps a task and its push configs through a kill while it waits for input", async () => {
    const client = await agent("a2a-signal");
    const key = uniqueKey("a2a-kill");
    const task = await send(client, message([{ data: { customer: "c-kill" } }]));
    await client.createTaskPushNotificationConfig({
      taskId: task.id,
      url: `${TARGET}/echo?key=${key}`,
    } as Wire);
    const stub = env.RUNS.get(env.RUNS.idFromString(task.id));
    await runInDurableObject(stub, (_o, state) => state.abort("killed while the task waits for input")).catch(
      () => {},
    );
    expect(json(await client.getTask({ id: task.id } as Wire)).status.state).toBe(
      "TASK_STATE_INPUT_REQUIRED",
    );
    const configs = (await client.listTaskPushNotificationConfig({ taskId: task.id } as Wire)) as Wire;
    expect(configs.configs.map((c: Wire) => c.url)).toEqual([`${TARGET}/echo?key=${key}`]);
    await send(client, message([{ data: { order_id: "K-1" } }], { taskId: task.id }));
    await poll(
      "the completed state at the receiver",
      () => targetLog(key),
      (log) => log.some((r) => r.body.includes("TASK_STATE_COMPLETED")),
    );
  });
});

describe("POST /a2a/{name} for requests no client would send", () => {
  it("wants the workflow's credentials before any JSON-RPC", async () => {
    const res = await rpc(
      "a2a-ten",
      { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } },
      { authorization: "Bearer wrong" },
    );
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("speaks A2A 1.0 only: no version (0.3) or another is -32009", async () => {
    for (const version of ["", "0.3", "2.0"]) {
      const res = await rpc(
        "a2a-signal",
        { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } },
        { "a2a-version": version },
      );
      const body = (await res.json()) as Wire;
      expect(body.error.code).toBe(-32009);
      expect(body.error.data[0]).toMatchObject({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "VERSION_NOT_SUPPORTED",
        domain: "a2a-protocol.org",
      });
    }
    const query = await call("/a2a/a2a-signal?A2A-Version=1.0", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }),
    });
    expect(((await query.json()) as Wire).error.code).toBe(-32001);
  });

  it("names every wrong field of a message with a BadRequest", async () => {
    const res = await rpc("a2a-signal", {
      jsonrpc: "2.0",
      id: 2,
      method: "SendMessage",
      params: { message: { role: "user", parts: [] } },
    });
    const body = (await res.json()) as Wire;
    expect(body.error.code).toBe(-32602);
    expect(body.error.data[0]["@type"]).toBe("type.googleapis.com/google.rpc.BadRequest");
    expect(body.error.data[0].fieldViolations.map((v: Wire) => v.field)).toEqual([
      "message.messageId",
      "message.role",
      "message.parts",
    ]);
  });

  it("answers an unknown method with -32601", async () => {
    const body = (await (
      await rpc("a2a-signal", { jsonrpc: "2.0", id: 3, method: "message/send", params: {} })
    ).json()) as Wire;
    expect(body.error.code).toBe(-32601);
  });
});
