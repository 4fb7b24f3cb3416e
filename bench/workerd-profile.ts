/**
 * A CPU profile of the bench Worker inside workerd, taken over its inspector (Chrome DevTools
 * Protocol on a local port) while our 10-step pipeline runs back to back. It answers "where does
 * our per-run time go" with workerd's own sampler, which the Node-side profile cannot: routing,
 * schema validation, the Durable Object shell, envelope building. Self time is summed per
 * function and per source module (the bundle's `// path` markers that esbuild writes).
 */
import { readFileSync } from "node:fs";
import type { Runner } from "./latency.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: Array<{
    children?: number[];
    id: number;
    callFrame: CallFrame;
    hitCount?: number;
    positionTicks?: Array<{ line: number; ticks: number }>;
  }>;
  samples: number[];
  startTime: number;
  endTime: number;
}

export interface HotSpot {
  /** `module: source line` for JavaScript, the function name for native code. */
  where: string;
  msPerRun: number;
  share: number;
}

export interface WorkerdProfile {
  label: string;
  runs: number;
  /** Isolate time per run that was not idle, in ms. */
  busyMsPerRun: number;
  /** By source module. */
  modules: HotSpot[];
  /** By source line (JavaScript) or native function, the top ones. */
  lines: HotSpot[];
  /** Every line's ms per run, to compare two profiles. */
  allLines: Record<string, number>;
}

/** Line number (0-based) -> module path, from esbuild's `// path` comments in the bundle. */
function moduleMap(lines: string[]): (line: number) => string {
  const starts: Array<[number, string]> = [];
  lines.forEach((text, i) => {
    const m = /^\/\/ (\S+\.(?:ts|js|mjs|json))$/.exec(text);
    if (m?.[1]) starts.push([i, m[1].replace(/^(\.\.\/)+/, "")]);
  });
  return (line) => {
    let name = "(bundle)";
    for (const [start, mod] of starts) {
      if (start > line) break;
      name = mod;
    }
    return name.replace(/^node_modules\/((?:@[^/]+\/)?[^/]+)\/.*$/, "$1");
  };
}

class Cdp {
  private nextId = 1;
  private readonly pending = new Map<number, (v: unknown) => void>();
  private readonly ws: WebSocket;
  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.addEventListener("message", (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: unknown };
      if (msg.id === undefined) return;
      this.pending.get(msg.id)?.(
        msg.error ? Promise.reject(new Error(JSON.stringify(msg.error))) : msg.result,
      );
      this.pending.delete(msg.id);
    });
  }
  static async connect(url: string): Promise<Cdp> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve(), { once: true });
      ws.addEventListener("error", () => reject(new Error(`cannot connect to ${url}`)), { once: true });
    });
    return new Cdp(ws);
  }
  send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise<T>((resolve) => this.pending.set(id, resolve as (v: unknown) => void));
  }
  close(): void {
    this.ws.close();
  }
}

/** Profiles the user Worker of the workerd at `inspectorPort` while `run` is repeated `runs` times. */
export async function profileWorkerd(
  label: string,
  inspectorPort: number,
  scriptPath: string,
  run: Runner,
  runs: number,
): Promise<WorkerdProfile> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as Array<{
    id: string;
    title?: string;
    webSocketDebuggerUrl?: string;
  }>;
  // Miniflare names the user's Worker `core:user:<name>`; the others are its plumbing.
  const target = targets.find((t) => t.webSocketDebuggerUrl && t.id.startsWith("core:user:"));
  if (!target?.webSocketDebuggerUrl) throw new Error("workerd inspector lists no target");
  const cdp = await Cdp.connect(target.webSocketDebuggerUrl);
  try {
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
    await cdp.send("Profiler.start");
    for (let i = 0; i < runs; i++) await run();
    const { profile } = await cdp.send<{ profile: CpuProfile }>("Profiler.stop");
    return summarizeProfile(profile, readFileSync(scriptPath, "utf8").split("\n"), label, runs);
  } finally {
    cdp.close();
  }
}

const IDLE = new Set(["(idle)", "(program)"]);

function summarizeProfile(
  profile: CpuProfile,
  script: string[],
  label: string,
  runs: number,
): WorkerdProfile {
  const moduleOf = moduleMap(script);
  const total = profile.samples.length || 1;
  const msPerTick = (profile.endTime - profile.startTime) / 1000 / total / runs;
  const mods = new Map<string, number>();
  const lines = new Map<string, number>();
  let busy = 0;
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  // Native time (SQLite `exec`, `setAlarm`) is charged to the JavaScript function that called it,
  // looking through the bench's own counting wrappers.
  const callerOf = (id: number): string => {
    for (let p = parentOf.get(id); p !== undefined; p = parentOf.get(p)) {
      const f = byId.get(p)?.callFrame;
      if (!f?.url) continue;
      if (/(sql\.exec|storage\.setAlarm) = \(/.test(script[f.lineNumber] ?? "")) continue;
      return `${f.functionName || "(anonymous)"} in ${moduleOf(f.lineNumber)}`;
    }
    return "?";
  };
  for (const node of profile.nodes) {
    const f = node.callFrame;
    const hits = node.hitCount ?? 0;
    if (hits === 0 || IDLE.has(f.functionName)) continue;
    busy += hits;
    if (!f.url) {
      const name = f.functionName.startsWith("(")
        ? f.functionName
        : `${f.functionName || "(anonymous)"} (native) ← ${callerOf(node.id)}`;
      add(mods, f.functionName.startsWith("(") ? f.functionName : "(native)", hits);
      add(lines, name, hits);
      continue;
    }
    const mod = moduleOf(f.lineNumber);
    add(mods, mod, hits);
    const ticks = node.positionTicks?.length ? node.positionTicks : [{ line: f.lineNumber + 1, ticks: hits }];
    for (const t of ticks) {
      const text = (script[t.line - 1] ?? "").trim().slice(0, 70);
      add(lines, `${moduleOf(t.line - 1)}: ${text}`, t.ticks);
    }
  }
  const top = (m: Map<string, number>, k: number): HotSpot[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([where, n]) => ({ where, msPerRun: n * msPerTick, share: n / Math.max(1, busy) }));
  return {
    label,
    runs,
    busyMsPerRun: busy * msPerTick,
    modules: top(mods, 8),
    lines: top(lines, 12),
    allLines: Object.fromEntries([...lines].map(([k, n]) => [k, n * msPerTick])),
  };
}
