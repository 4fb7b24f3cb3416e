/**
 * `workflow-edge`: drive a deployment from a terminal (docs/cli.md). It speaks only the HTTP API
 * (cli/api.ts), so it works against `npm start` and a deployed Worker alike. Exit status: 0 on
 * success (a run that ended complete, or was accepted), 1 when a run ended failed or canceled or
 * the API answered an error (stderr: `error: <code>: <detail>`, then each of the problem's
 * `errors[]` on its own line), 2 for a usage error.
 * `--json` prints exactly the API's JSON on stdout and nothing else.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ApiError, type Connection, request } from "./api.ts";
import { deliveries } from "./deliveries.ts";
import { init } from "./init.ts";
import { painter, status, table } from "./render.ts";
import { type Options, runs, showAccepted, showRun, streamInvoke } from "./runs.ts";
import { schedules } from "./schedules.ts";
import { scores } from "./scores.ts";
import { need, type Out, UsageError } from "./usage.ts";
import { workflows } from "./workflows.ts";

const USAGE = `usage: workflow-edge [--url URL] [--token TOKEN] [--header NAME:VALUE]... [--json] <command>

commands:
  workflows                        every workflow served, its invoke URL and its protocols' base URLs
  invoke NAME [--data JSON | --data @FILE] [--wait [N] | --stream] [--idempotency-key K]
  runs list --workflow NAME [--status S] [--compensation failed] [--search KEY=VALUE]... [--limit N] [--all]
  runs get ID
  runs tail ID
  runs cancel ID
  runs compensate ID               tries every failed compensation of the run once more
  runs rerun ID [--from STEP] [--current] [--wait [N]]
  runs delete ID
  approvals ID
  approve ID APPROVAL_ID [--comment C]
  reject ID APPROVAL_ID [--comment C]
  signal ID NAME [--data JSON | --data @FILE]
  deliveries list --workflow NAME [--state S] [--limit N] [--all]
  deliveries retry ID
  deliveries recover --workflow NAME --since T
  schedules NAME [--from T] [--count N]   the next fire times of NAME's schedule entries
  schedules run|pause|resume NAME INDEX  start entry INDEX (0-based) now, pause or resume it
  schedules backfill NAME INDEX --from T --to T   one run per firing in [T, T)
  validate | build                 the project's npm scripts
  test [FILE|DIR]...               the workflow tests (npm run test:workflows)
  eval [FILE|DIR]... [--live] [--min SCORER=MEAN]... [--json OUT]   scores the tests' cases (npm run eval)
  scores NAME [--since T] [--until T]   the workflow's scores per step, scorer, version and arm, and each arm against the first
  init NAME                        writes workflows/NAME.workflow.yaml and its test

--url defaults to $WORKFLOW_EDGE_URL, else http://localhost:8787; --token to $WORKFLOW_EDGE_TOKEN
(sent as Authorization: Bearer).`;

/** `--wait` takes an optional number: `--wait`, `--wait 30`, `--wait=30`. */
function splitWait(argv: string[]): { argv: string[]; wait: number | null } {
  const out: string[] = [];
  let wait: number | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === "--wait") {
      const next = argv[i + 1];
      if (next !== undefined && /^\d+$/.test(next)) {
        wait = Number(next);
        i++;
      } else wait = 60;
    } else if (a.startsWith("--wait=")) {
      const v = a.slice(7);
      if (!/^\d+$/.test(v)) throw new UsageError(`--wait takes a number of seconds, not "${v}"`);
      wait = Number(v);
    } else out.push(a);
  }
  if (wait !== null && wait > 60) throw new UsageError("--wait is at most 60 seconds (the API's limit)");
  return { argv: out, wait };
}

/** `--data JSON` or `--data @FILE`: a JSON object. */
function readData(raw: string | undefined): unknown {
  if (raw === undefined) return {};
  let text = raw;
  if (raw.startsWith("@")) {
    try {
      text = readFileSync(raw.slice(1), "utf8");
    } catch {
      throw new UsageError(`--data ${raw}: cannot read ${raw.slice(1)}`);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--data is not valid JSON (${e instanceof Error ? e.message : e})`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new UsageError("--data must be a JSON object");
  }
  return value;
}

export async function main(argv: string[], io = { tty: Boolean(process.stdout.isTTY) }): Promise<number> {
  const lines: string[] = [];
  let json = false;
  try {
    // `eval` takes its own options (`--json OUT` is a file there): handed to `npm run eval` as typed.
    if (argv[0] === "eval") {
      const cwd = process.env.INIT_CWD ?? process.cwd();
      const r = spawnSync("npm", ["run", "--silent", "eval", "--", ...argv.slice(1)], {
        stdio: "inherit",
        cwd,
      });
      return r.status ?? 1;
    }
    const waited = splitWait(argv);
    const { values, positionals } = parseArgs({
      args: waited.argv,
      allowPositionals: true,
      options: {
        workflow: { type: "string" },
        status: { type: "string" },
        compensation: { type: "string" },
        limit: { type: "string" },
        all: { type: "boolean" },
        from: { type: "string" },
        current: { type: "boolean" },
        url: { type: "string" },
        token: { type: "string" },
        header: { type: "string", multiple: true },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        data: { type: "string" },
        stream: { type: "boolean" },
        "idempotency-key": { type: "string" },
        comment: { type: "string" },
        state: { type: "string" },
        since: { type: "string" },
        count: { type: "string" },
        to: { type: "string" },
        until: { type: "string" },
        search: { type: "string", multiple: true },
      },
    });
    json = values.json === true;
    const out: Out = {
      json,
      paint: painter(io.tty && !json),
      print: (t) => lines.push(t),
      write: (t) => {
        flush(lines);
        process.stdout.write(t);
      },
    };
    const [command, ...args] = positionals;
    if (values.help || !command) {
      out.print(USAGE);
      return values.help ? 0 : 2;
    }
    const headers: Array<[string, string]> = [];
    for (const h of (values.header as string[] | undefined) ?? []) {
      const cut = h.indexOf(":");
      if (cut <= 0) throw new UsageError(`--header takes NAME:VALUE, not "${h}"`);
      headers.push([h.slice(0, cut).trim(), h.slice(cut + 1).trim()]);
    }
    const conn: Connection = {
      url: String(values.url ?? process.env.WORKFLOW_EDGE_URL ?? "http://localhost:8787"),
      token: (values.token as string | undefined) ?? process.env.WORKFLOW_EDGE_TOKEN ?? null,
      headers,
    };
    // An option another command takes is a usage error here, not silently ignored.
    const takes: Record<string, string[]> = {
      invoke: ["data", "idempotency-key", "stream"],
      runs: ["workflow", "status", "compensation", "search", "limit", "all", "from", "current"],
      approve: ["comment"],
      reject: ["comment"],
      signal: ["data"],
      deliveries: ["workflow", "state", "since", "limit", "all"],
      schedules: ["from", "count", "to"],
      scores: ["since", "until"],
    };
    const global = new Set(["url", "token", "header", "json", "help"]);
    for (const k of Object.keys(values)) {
      if (!global.has(k) && !(takes[command] ?? []).includes(k)) {
        throw new UsageError(`${command} does not take --${k}`);
      }
    }
    if (waited.wait !== null && command !== "invoke" && !(command === "runs" && args[0] === "rerun")) {
      throw new UsageError(`${command} does not take --wait`);
    }
    switch (command) {
      case "workflows":
        need(args, 0, "argument");
        return await workflows(conn, out, json);
      case "invoke": {
        const [name] = need(args, 1, "workflow NAME");
        const h: Record<string, string> = {};
        if (waited.wait !== null) h.prefer = `wait=${waited.wait}`;
        if (values["idempotency-key"]) h["idempotency-key"] = String(values["idempotency-key"]);
        if (values.stream)
          return await streamInvoke(
            conn,
            out,
            name as string,
            readData(values.data as string | undefined),
            h,
          );
        const res = await request(conn, "POST", `/invoke/${encodeURIComponent(name as string)}`, {
          body: readData(values.data as string | undefined),
          headers: h,
        });
        const b = res.body as Record<string, unknown>;
        if (res.status === 202) return showAccepted(out, b);
        if (b && typeof b === "object" && "steps" in b) return showRun(out, b);
        out.print(JSON.stringify(b, null, 2)); // invoke.response: the workflow's own answer
        return 0;
      }
      case "runs":
        return await runs(conn, out, args, values as Options, waited.wait);
      case "deliveries":
        return await deliveries(conn, out, args, values as Options & { state?: string; since?: string });
      case "approvals": {
        const [id] = need(args, 1, "run ID");
        const body = (await request(conn, "GET", `/runs/${encodeURIComponent(id as string)}/approvals`))
          .body as {
          approvals: Array<Record<string, string>>;
        };
        if (json) out.print(JSON.stringify(body, null, 2));
        else if (body.approvals.length === 0) out.print("no approvals");
        else
          out.print(
            table([
              ["APPROVAL", "STEP", "STATUS", "WHAT"],
              ...body.approvals.map((a) => [
                a.id ?? "",
                a.step ?? "",
                status(out.paint, a.status ?? ""),
                a.kind === "tool" ? `${a.tool} on ${a.server}` : "output",
              ]),
            ]),
          );
        return 0;
      }
      case "approve":
      case "reject": {
        const [id, approval] = need(args, 2, "run ID and APPROVAL_ID");
        const decision = command === "approve" ? "approved" : "rejected";
        const body = values.comment ? { decision, comment: values.comment } : { decision };
        const path = `/runs/${encodeURIComponent(id as string)}/approvals/${encodeURIComponent(approval as string)}`;
        const a = (await request(conn, "POST", path, { body })).body as Record<string, string>;
        out.print(json ? JSON.stringify(a, null, 2) : `${a.status}: approval ${a.id}`);
        return 0;
      }
      case "signal": {
        const [id, name] = need(args, 2, "run ID and signal NAME");
        const path = `/runs/${encodeURIComponent(id as string)}/signals/${encodeURIComponent(name as string)}`;
        const r = (await request(conn, "POST", path, { body: readData(values.data as string | undefined) }))
          .body as Record<string, unknown>;
        out.print(
          json ? JSON.stringify(r, null, 2) : r.delivered ? `delivered to ${r.step}` : "kept for the wait",
        );
        return 0;
      }
      case "schedules":
        return await schedules(conn, out, args, values, json);
      case "scores":
        return await scores(conn, out, args, values as { since?: string; until?: string }, json);
      case "validate":
      case "build":
      case "test": {
        // `test` takes what `npm run test:workflows` takes: test files or folders.
        if (command !== "test") need(args, 0, "argument");
        const script = command === "test" ? "test:workflows" : command;
        const files = args.length > 0 ? ["--", ...args] : [];
        // From where the command was typed (`npm run cli` runs it in the package root), so that a
        // relative FILE means what it meant there.
        const cwd = process.env.INIT_CWD ?? process.cwd();
        const r = spawnSync("npm", ["run", "--silent", script, ...files], { stdio: "inherit", cwd });
        return r.status ?? 1;
      }
      case "init": {
        const [name] = need(args, 1, "workflow NAME");
        return init(out, name as string);
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    flush(lines);
    lines.length = 0;
    if (
      e instanceof UsageError ||
      (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      process.stderr.write(`error: usage: ${e.message}\n(workflow-edge --help lists the commands)\n`);
      return 2;
    }
    if (e instanceof ApiError) {
      process.stderr.write(`error: ${e.code}: ${e.message}\n`);
      for (const line of problemErrors(e.body)) process.stderr.write(`  ${line}\n`);
      if (json && e.body && typeof e.body === "object")
        process.stdout.write(`${JSON.stringify(e.body, null, 2)}\n`);
      return 1;
    }
    process.stderr.write(`error: internal: ${e instanceof Error ? e.message : String(e)}\n`);
    return 1;
  } finally {
    flush(lines);
  }
}

/** A problem's `errors[]`, one line each: where (a JSON Pointer into what was sent) and what to fix. */
function problemErrors(body: unknown): string[] {
  const errors = body && typeof body === "object" && "errors" in body ? body.errors : null;
  if (!Array.isArray(errors)) return [];
  return errors.map((x: { path?: unknown; message?: unknown }) =>
    typeof x?.message === "string"
      ? `${typeof x.path === "string" && x.path !== "" ? x.path : "(the body)"}: ${x.message}`
      : JSON.stringify(x),
  );
}

function flush(lines: string[]): void {
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
  lines.length = 0;
}
