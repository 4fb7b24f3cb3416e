/**
 * The tool loop of an agent with `servers:` (docs/agents-and-tools.md). Each turn is one model call under the
 * budget rules (the gateway reserves its worst case); the model is offered only the tools its
 * allowlists let through, in each provider's native form. Calls of one reply run concurrently
 * (the run's outbound limit applies); a call of a tool that is not offered is never made and fails
 * the step; a call gated by `require_approval` waits for a human through the approvals host.
 * `max_turns` counts the model calls: at the last one no tools are offered and the model must
 * answer.
 *
 * The conversation is a checkpoint of the step, saved after every model reply and after every
 * turn's tool results: a run resumed after an eviction continues at its last finished turn, and a
 * gated call asked again finds its approval by the same key. The MCP client is reached only
 * through `ctx.tools`, so a test (or the workflow-test runner) can stand in for every server.
 */
import type { CompiledApprovalPolicy, CompiledGroup, CompiledServerRef, Json } from "../bundle.ts";
import { governingEntry } from "../engine/allowlist.ts";
import { systemClock } from "../engine/clock.ts";
import { render, stringify } from "../engine/substitute.ts";
import { httpOutcome } from "../engine/trace.ts";
import {
  type ApprovalOutcome,
  type StepContext,
  StepError,
  type StepMetrics,
  type ToolCallRecord,
  type ToolSession,
} from "../engine/types.ts";
import { completeInGroup, type GroupCompletion } from "../gateway/complete.ts";
import type { ToolCall, ToolResultMessage, ToolSpec } from "../gateway/provider.ts";
import {
  FINAL_TURN_PROMPT,
  type LoopPlan,
  type LoopResult,
  type LoopState,
  type OfferedTool,
} from "./tool-loop-state.ts";
import { providerToolNames, refuseSecretToCallerHost, serverTarget, toolParameters } from "./tool-servers.ts";

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function snapshotMetrics(m: StepMetrics): LoopState["metrics"] {
  const { duration_ms: _d, ...rest } = m;
  return rest;
}

export class ToolLoop {
  private readonly ctx: StepContext;
  private readonly refs: CompiledServerRef[];
  private readonly agentParams: Json;
  private readonly group: CompiledGroup;
  private readonly plan: LoopPlan;
  private readonly sessions = new Map<string, Promise<ToolSession>>();
  state: LoopState;

  constructor(
    ctx: StepContext,
    refs: CompiledServerRef[],
    agentParams: Json,
    group: CompiledGroup,
    plan: LoopPlan,
  ) {
    this.ctx = ctx;
    this.refs = refs;
    this.agentParams = agentParams;
    this.group = group;
    this.plan = plan;
    const saved = ctx.checkpoint?.load() as LoopState | null | undefined;
    if (saved && saved.v === 1) {
      this.state = saved;
      // The step record and metrics continue where the earlier incarnation left them.
      for (const [k, v] of Object.entries(saved.metrics)) {
        const key = k as keyof LoopState["metrics"];
        if (typeof v === "number") ctx.metrics[key] += v;
      }
      ctx.toolCalls?.push(...saved.toolCalls);
    } else {
      this.state = {
        v: 1,
        turn: 0,
        messages: [{ role: "user", content: plan.user }],
        tools: null,
        model: null,
        toolCalls: [],
        metrics: snapshotMetrics(ctx.metrics),
      };
    }
  }

  /** The run's clock (virtual in workflow tests), so call times agree with the step's. */
  private now(): number {
    return (this.ctx.clock ?? systemClock).now();
  }

  save(): void {
    this.state.metrics = snapshotMetrics(this.ctx.metrics);
    this.state.toolCalls = this.ctx.toolCalls ?? this.state.toolCalls;
    this.ctx.checkpoint?.save(this.state as unknown as Json);
  }

  /** Runs turns until the model answers without tool calls; returns that answer. */
  async run(): Promise<LoopResult> {
    const s = this.state;
    // Resumed with a reply whose tool calls never got their results: run them first.
    const last = s.messages[s.messages.length - 1];
    if (last?.role === "assistant" && last.toolCalls && last.toolCalls.length > 0) {
      await this.runCalls(last.toolCalls, s.turn);
    }
    for (;;) {
      const lastTurn = s.turn + 1 >= this.plan.maxTurns;
      const tools = lastTurn ? [] : await this.offeredTools();
      if (lastTurn && s.turn > 0) s.messages.push({ role: "user", content: FINAL_TURN_PROMPT });
      const conversation = [...s.messages];
      const reply: GroupCompletion = await completeInGroup(
        this.ctx.bundle.gateway,
        this.group,
        {
          system: this.plan.system,
          messages: conversation,
          maxTokens: this.plan.maxTokens,
          json: this.plan.json,
          jsonSchema: this.plan.schema,
          ...(tools.length > 0 ? { tools: tools.map((t) => this.spec(t)) } : {}),
        },
        this.ctx,
        s.model,
      );
      s.turn += 1;
      s.model = reply.model;
      if (reply.toolCalls.length === 0) {
        // An empty reply at the last turn of a tool loop is no final answer. Anywhere else (an agent
        // without tools makes one call) it is an invalid answer: the caller's one repair call follows.
        if (reply.text.trim() === "" && lastTurn && this.refs.length > 0) {
          throw new StepError(
            "max_turns_exceeded",
            `no final answer after max_turns = ${this.plan.maxTurns} model calls`,
          );
        }
        this.save();
        return { text: reply.text, model: reply.model, messages: conversation };
      }
      if (lastTurn) {
        throw new StepError(
          "max_turns_exceeded",
          `the model still called tools at its last turn (max_turns = ${this.plan.maxTurns}) and gave no final answer`,
        );
      }
      s.messages.push({ role: "assistant", content: reply.text, toolCalls: reply.toolCalls });
      this.save();
      await this.runCalls(reply.toolCalls, s.turn);
    }
  }

  private spec(t: OfferedTool): ToolSpec {
    return { name: t.offered, description: t.description, parameters: t.parameters };
  }

  /** Asks every server for its tools once per step (kept in the checkpoint), filtered by the allowlists. */
  private async offeredTools(): Promise<OfferedTool[]> {
    if (this.state.tools !== null) return this.state.tools;
    // A host without tools (the workflow-test runner, whose agents answer from mocks) offers none.
    if (!this.ctx.tools) return [];
    const listed = await Promise.all(
      this.refs.map(async (ref) => {
        const session = await this.session(ref);
        let tools: Awaited<ReturnType<ToolSession["listTools"]>>;
        try {
          tools = await session.listTools(this.ctx.signal);
        } catch (e) {
          if (this.ctx.signal.aborted) throw this.ctx.signal.reason ?? e;
          // tool_auth_failed (a refused OAuth grant) is its own verdict.
          if (e instanceof StepError) throw e;
          throw new StepError(
            "tool_failed",
            `tool server ${ref.name}: ${e instanceof Error ? e.message : String(e)}`,
          );
        }
        return tools.filter((t) => governingEntry(ref.allow, t.name) !== undefined).map((t) => ({ ref, t }));
      }),
    );
    const all = listed.flat();
    const count = new Map<string, number>();
    for (const { t } of all) count.set(t.name, (count.get(t.name) ?? 0) + 1);
    const names = providerToolNames(
      all.map(({ ref, t }) => ((count.get(t.name) ?? 0) > 1 ? `${ref.name}__${t.name}` : t.name)),
    );
    this.state.tools = all.map(({ ref, t }, i) => ({
      offered: names[i] ?? t.name,
      server: ref.name,
      tool: t.name,
      description: t.description,
      parameters: toolParameters(t.inputSchema),
    }));
    this.save();
    return this.state.tools;
  }

  private session(ref: CompiledServerRef): Promise<ToolSession> {
    let s = this.sessions.get(ref.name);
    if (!s) {
      const host = this.ctx.tools;
      if (!host) throw new StepError("internal_error", "this run has no tool host");
      const target = serverTarget(ref, this.agentParams, this.ctx.path);
      refuseSecretToCallerHost(ref.name, target, this.plan.callerHostServers ?? [], this.ctx);
      s = host.connect(target, this.ctx.signal).catch((e: unknown) => {
        this.sessions.delete(ref.name);
        if (this.ctx.signal.aborted) throw this.ctx.signal.reason ?? e;
        if (e instanceof StepError) throw e;
        throw new StepError(
          "tool_failed",
          `tool server ${ref.name}: ${e instanceof Error ? e.message : String(e)}`,
        );
      });
      this.sessions.set(ref.name, s);
    }
    return s;
  }

  async close(): Promise<void> {
    const open = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(open.map(async (p) => (await p).close()));
  }

  /** One reply's tool calls: permission, approvals, then the calls that may run, concurrently. */
  private async runCalls(calls: ToolCall[], turn: number): Promise<void> {
    const tools = this.state.tools ?? (await this.offeredTools());
    const resolved = calls.map((call) => {
      const offered = tools.find((t) => t.offered === call.name);
      const ref = offered ? this.refs.find((r) => r.name === offered.server) : undefined;
      const entry = offered && ref ? governingEntry(ref.allow, offered.tool) : undefined;
      return { call, offered, ref, entry };
    });
    const refused = resolved.find((r) => !r.offered || !r.ref || !r.entry);
    if (refused) {
      throw new StepError(
        "tool_not_permitted",
        `the model called \`${refused.call.name}\`, which is not an allowlisted tool of this agent; the call was not made`,
      );
    }

    // Gated calls: every approval of the reply is asked at once; the turn waits for all of them.
    const outcomes = await Promise.all(
      resolved.map((r, i) =>
        r.entry?.approval
          ? this.approve(r.offered as OfferedTool, r.call, r.entry.approval, `t${turn}.${i}`)
          : null,
      ),
    );
    const failure = (o: ApprovalOutcome | null, policy: CompiledApprovalPolicy | null | undefined) => {
      if (!o || !policy || o.status === "approved") return null;
      if (o.status === "timeout" && policy.timeoutBehavior === "fail") return "approval_timeout" as const;
      return policy.onReject === "fail" ? ("approval_rejected" as const) : null;
    };
    const failing = resolved.findIndex((r, i) => failure(outcomes[i] ?? null, r.entry?.approval) !== null);
    if (failing >= 0) {
      // The step ends here: every call of the reply is still recorded (none was made), the refused
      // ones with why, the others (approved, or not gated) with the reason they were not made.
      resolved.forEach((r, i) => {
        const o = outcomes[i] ?? null;
        if (o && o.status !== "approved") this.refusedCall(r.offered as OfferedTool, r.call, o);
        else {
          const record = this.record(r.offered as OfferedTool, r.call, o);
          record.error = "Not made: another call of this reply was refused and the step failed.";
          record.finished_at = record.started_at;
        }
      });
      const o = outcomes[failing] as ApprovalOutcome;
      const tool = resolved[failing]?.offered?.tool ?? "";
      if (failure(o, resolved[failing]?.entry?.approval) === "approval_timeout") {
        throw new StepError("approval_timeout", `the approval of \`${tool}\` timed out (${o.id})`);
      }
      throw new StepError(
        "approval_rejected",
        `a reviewer rejected the call of \`${tool}\`${o.comment ? `: ${o.comment}` : ""} (${o.id})`,
      );
    }

    const results = await Promise.all(
      resolved.map((r, i) => this.callOne(r.offered as OfferedTool, r.call, outcomes[i] ?? null)),
    );
    this.state.messages.push({ role: "tool", results });
    this.save();
  }

  private approve(
    tool: OfferedTool,
    call: ToolCall,
    policy: CompiledApprovalPolicy,
    key: string,
  ): Promise<ApprovalOutcome> {
    const host = this.ctx.approvals;
    if (!host) throw new StepError("internal_error", "this run cannot ask for approvals");
    const scope = { params: this.agentParams, env: {}, step: {} };
    // A notify URL that renders empty (an optional param left out) means: no notification.
    const url = policy.notify ? stringify(render(policy.notify.url, scope)) : "";
    const notify =
      policy.notify && url !== ""
        ? {
            url,
            signSecret: policy.notify.signSecret
              ? stringify(render(policy.notify.signSecret, scope)) || null
              : null,
          }
        : null;
    return host.request(
      {
        key,
        kind: "tool",
        server: tool.server,
        tool: tool.tool,
        arguments: call.arguments,
        timeoutS: policy.timeoutS,
        notify,
      },
      this.ctx.signal,
    );
  }

  /** A new record in the step's `tool_calls` (counted in `metrics.tool_calls`). */
  private record(tool: OfferedTool, call: ToolCall, approval: ApprovalOutcome | null): ToolCallRecord {
    const record: ToolCallRecord = {
      server: tool.server,
      name: tool.tool,
      arguments: call.arguments,
      result: null,
      error: null,
      started_at: iso(this.now()),
      finished_at: null,
      approval: approval ? { id: approval.id, status: approval.status, comment: approval.comment } : null,
    };
    this.ctx.toolCalls?.push(record);
    this.ctx.metrics.tool_calls += 1;
    return record;
  }

  /** Records a gated call that was not made (rejected or timed out); returns why, as the model hears it. */
  private refusedCall(tool: OfferedTool, call: ToolCall, approval: ApprovalOutcome): string {
    const why =
      approval.status === "timeout"
        ? "No reviewer decided on this call in time; it was not made."
        : `A reviewer rejected this call; it was not made.${approval.comment ? ` Comment: ${approval.comment}` : ""}`;
    const record = this.record(tool, call, approval);
    record.error = why;
    record.finished_at = record.started_at;
    return why;
  }

  private async callOne(
    tool: OfferedTool,
    call: ToolCall,
    approval: ApprovalOutcome | null,
  ): Promise<ToolResultMessage> {
    if (approval && approval.status !== "approved") {
      // on_reject: recover (or a timeout that acts as a rejection): the model hears why and goes on.
      return {
        callId: call.id,
        name: call.name,
        content: this.refusedCall(tool, call, approval),
        isError: true,
      };
    }
    const record = this.record(tool, call, approval);
    const answer = (content: string, isError: boolean): ToolResultMessage => {
      record.finished_at = iso(this.now());
      if (isError) record.error = content;
      return { callId: call.id, name: call.name, content, isError };
    };

    if (call.invalidArguments)
      return answer(`The call was not made: its arguments are ${call.invalidArguments}.`, true);

    const ref = this.refs.find((r) => r.name === tool.server) as CompiledServerRef;
    try {
      const session = await this.session(ref);
      // One client span per tool call, its traceparent on the call's request.
      const span = this.ctx.trace?.client(`execute_tool ${tool.tool}`, { "gen_ai.tool.name": tool.tool });
      const result = await session
        .callTool(tool.tool, call.arguments, this.ctx.signal, span && { traceparent: span.traceparent })
        .then(
          (r) => {
            span?.end({}, r.isError ? "the tool answered an error" : undefined);
            return r;
          },
          (e: unknown) => {
            span?.end(httpOutcome(null, e), "the tool call failed");
            throw e;
          },
        );
      const content =
        result.structuredContent !== null && result.text === ""
          ? JSON.stringify(result.structuredContent)
          : result.structuredContent !== null
            ? `${result.text}\n${JSON.stringify(result.structuredContent)}`
            : result.text;
      if (!result.isError) record.result = result.structuredContent ?? result.text;
      return answer(content, result.isError);
    } catch (e) {
      if (this.ctx.signal.aborted) throw this.ctx.signal.reason ?? e;
      // A StepError is a verdict on the step, not a failed call: a server that cannot be reached
      // (tool_failed, as when listing) or, in workflow tests, a call without a mock (unmocked_step).
      if (e instanceof StepError) throw e;
      // A failed call goes back to the model as an error result: it may try another way.
      const message = e instanceof Error ? e.message : String(e);
      return answer(`The tool call failed: ${message}`, true);
    }
  }
}
