/**
 * Human output of the CLI: tables and a run's step-by-step summary with statuses and durations.
 * Colour only when the output is a terminal (and NO_COLOR is unset); `--json` bypasses all of it.
 */

const CODES: Record<string, string> = { green: "32", red: "31", yellow: "33", dim: "2", bold: "1" };

export function painter(tty: boolean): (colour: string, text: string) => string {
  const on = tty && !process.env.NO_COLOR;
  return (colour, text) => (on ? `\u001b[${CODES[colour] ?? "0"}m${text}\u001b[0m` : text);
}

const STATUS_COLOUR: Record<string, string> = {
  complete: "green",
  failed: "red",
  canceled: "red",
  running: "yellow",
  pending: "dim",
  queued: "dim",
  waiting: "yellow",
  pending_approval: "yellow",
  skipped: "dim",
  approved: "green",
  rejected: "red",
  timeout: "red",
};

export function status(paint: ReturnType<typeof painter>, s: string): string {
  return paint(STATUS_COLOUR[s] ?? "bold", s);
}

/** `1.2 s`, `340 ms`, `2 min 5 s`; empty for null. */
export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function between(from: unknown, to: unknown): number | null {
  if (typeof from !== "string") return null;
  const end = typeof to === "string" ? Date.parse(to) : Date.now();
  return end - Date.parse(from);
}

/** Columns padded to their widest cell (colour codes not counted). */
export function table(rows: string[][]): string {
  const ESC = String.fromCharCode(27);
  const visible = (s: string) =>
    s
      .split(ESC)
      .map((p, i) => (i === 0 ? p : p.replace(/^\[[0-9;]*m/, "")))
      .join("").length;
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visible(c));
    });
  }
  return rows
    .map((r) =>
      r.map((c, i) => (i === r.length - 1 ? c : c + " ".repeat((widths[i] ?? 0) - visible(c)))).join("  "),
    )
    .join("\n");
}

interface Step {
  id: string;
  status: string;
  started_at: string | null;
  finished_at: string | null;
  error: { code: string; message: string } | null;
  reused_from?: string | null;
  metrics?: { attempts?: number; cost_usd?: number };
  steps?: Step[];
}

/**
 * A run: its status line, then each step (children indented) with status, duration and error,
 * the totals, the run's output (compact JSON) and its error.
 */
export function runSummary(paint: ReturnType<typeof painter>, e: Record<string, unknown>): string {
  const lines = [
    `${paint("bold", String(e.workflow))} run ${e.run_id} ${status(paint, String(e.status))}` +
      (e.rerun_of ? paint("dim", ` (re-run of ${e.rerun_of})`) : ""),
  ];
  const why = queueNote(e);
  if (why) lines.push(paint("dim", `  ${why}`));
  if (typeof e.coalesced === "number" && e.coalesced > 1)
    lines.push(paint("dim", `  stands for ${e.coalesced} invokes (debounce or batch)`));
  const rows: string[][] = [];
  const walk = (steps: Step[], depth: number) => {
    for (const s of steps) {
      const notes = [
        s.reused_from ? `reused from ${s.reused_from.slice(0, 12)}` : "",
        (s.metrics?.attempts ?? 0) > 1 ? `${s.metrics?.attempts} attempts` : "",
        s.error ? `${s.error.code}: ${s.error.message}` : "",
      ].filter(Boolean);
      rows.push([
        `${"  ".repeat(depth + 1)}${s.id}`,
        status(paint, s.status),
        duration(s.started_at ? between(s.started_at, s.finished_at) : null),
        notes.join("; "),
      ]);
      walk(s.steps ?? [], depth + 1);
    }
  };
  walk((e.steps as Step[]) ?? [], 0);
  if (rows.length > 0) lines.push(table(rows));
  const totals = (e.totals ?? {}) as { duration_ms?: number; cost_usd?: number };
  lines.push(
    paint(
      "dim",
      `  total ${duration(totals.duration_ms ?? null)}, cost $${(totals.cost_usd ?? 0).toFixed(4)}`,
    ),
  );
  // The run's output, compact, once there is one: what a script or a person came for.
  if (e.output !== null && e.output !== undefined) lines.push(`  output ${JSON.stringify(e.output)}`);
  const err = e.error as { code: string; message: string; step: string | null } | null;
  if (err)
    lines.push(paint("red", `  error ${err.code}${err.step ? ` at ${err.step}` : ""}: ${err.message}`));
  // What a failed or canceled run undid (docs/file-format.md, "Compensation").
  const comp = e.compensation as {
    status: string;
    steps: Array<{
      step: string;
      status: string;
      attempts: number;
      error: { code: string; message: string } | null;
    }>;
  } | null;
  if (comp) {
    lines.push(`  compensation ${status(paint, comp.status)}`);
    for (const c of comp.steps) {
      const tries = c.attempts > 1 ? ` (${c.attempts} attempts)` : "";
      const why = c.error ? paint("red", ` ${c.error.code}: ${c.error.message}`) : "";
      lines.push(`    undo ${c.step} ${status(paint, c.status)}${tries}${why}`);
    }
  }
  return lines.join("\n");
}

/** One line per SSE event of `runs tail`. */
export function eventLine(
  paint: ReturnType<typeof painter>,
  type: string,
  d: Record<string, unknown>,
): string {
  const time = typeof d.time === "string" ? d.time.slice(11, 23) : "";
  if (type === "run.completed") {
    const err = d.error as { code: string; message: string } | null;
    return `${time} run ${status(paint, String(d.status))}${err ? ` ${err.code}: ${err.message}` : ""}`;
  }
  if (type.startsWith("compensation.")) {
    const err = d.error as { code: string; message: string } | null;
    const what =
      type === "compensation.started"
        ? "undoing"
        : type === "compensation.completed"
          ? "undone"
          : "undo failed";
    return `${time} ${String(d.step ?? "")} ${paint(type === "compensation.failed" ? "red" : "dim", what)}${err ? ` ${err.code}: ${err.message}` : ""}`;
  }
  if (type.startsWith("approval.")) {
    const a = (d.approval ?? {}) as { id?: string; status?: string; step?: string };
    return `${time} ${type} ${a.step ?? ""} ${a.id ?? ""} ${a.status ?? ""}`.trimEnd();
  }
  const took = d.started_at && d.finished_at ? ` ${duration(between(d.started_at, d.finished_at))}` : "";
  const err = d.error as { code: string } | null;
  return `${time} ${String(d.step ?? "")} ${status(paint, String(d.status ?? type))}${took}${err ? ` ${err.code}` : ""}`;
}

/** Why a queued run waits and when it is expected to start (docs/triggers.md, "Shaping bursts"); "" when it does not wait. */
export function queueNote(e: Record<string, unknown>): string {
  const q = e.queue as { reason?: string; starts_at?: string | null } | null | undefined;
  if (!q?.reason) return "";
  return `queued by ${q.reason}, ${q.starts_at ? `expected to start ${q.starts_at}` : "until a run of its key ends"}`;
}

/** A schedule entry of `GET /workflows/{name}/schedules` and its next fire times. */
export interface Schedule {
  index?: number;
  cron: string;
  timezone: string;
  paused?: boolean;
  next: string[];
}

/** One row per fire time: UTC as the API says it, and the wall clock of the entry's zone. */
export function schedulesTable(schedules: Schedule[]): string {
  if (schedules.length === 0) return "no schedule";
  const rows = [["CRON", "TIMEZONE", "NEXT (UTC)", "LOCAL"]];
  for (const s of schedules) {
    const local = new Intl.DateTimeFormat("sv-SE", {
      timeZone: s.timezone,
      dateStyle: "short",
      timeStyle: "short",
    });
    const cron = s.paused ? `${s.cron} (paused)` : s.cron;
    if (s.next.length === 0) rows.push([cron, s.timezone, "-", ""]);
    s.next.forEach((t, i) => {
      rows.push([i === 0 ? cron : "", i === 0 ? s.timezone : "", t, local.format(new Date(t))]);
    });
  }
  return table(rows);
}
