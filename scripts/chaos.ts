/**
 * `npm run chaos [-- --quick] [--seed N] [--runs N] [--kills N] [--kinds a,b]`: faults at random (docs/operations.md,
 * "Chaos"). The Worker, built with the chaos workflows (scripts/chaos/workflows/: transforms,
 * webhooks with retries, waits for signals and sleeps, fan-out, a sub-workflow, a saga's
 * compensation, a streaming agent, concurrency, debounce, batch, a queue, email, express runs,
 * notifications, a chat model, an A2A task that asks for input), is served from one local workerd with its storage on disk; a mixed load of
 * runs goes on while the process is SIGKILLed and restarted at random instants, and the
 * receivers and the model provider fail at random (scripts/chaos/servers.ts). Then the five
 * invariants are checked (scripts/chaos/invariants.ts) and printed as a table; a violation fails
 * the run with the seed and the run ids. The seed is printed first: `--seed` replays the schedule.
 * Not part of `npm test`; CI runs `--quick`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  deliveries,
  type Evidence,
  existence,
  finalEnvelopes,
  limitsAndSecrets,
  listing,
  type Row,
  sideEffects,
} from "./chaos/invariants.ts";
import { type Invoked, KINDS, startOne, type Target } from "./chaos/load.ts";
import { Prng } from "./chaos/prng.ts";
import { startChaosServers } from "./chaos/servers.ts";
import { type LocalWorker, serveWorker } from "./local-worker.ts";
import { buildRelease } from "./release-build.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    seed: { type: "string" },
    runs: { type: "string" },
    kills: { type: "string" },
    kinds: { type: "string" },
  },
});
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const runs = Number(values.runs ?? (values.quick ? 240 : 1000));
const killsWanted = Number(values.kills ?? (values.quick ? 20 : 40));
/** `--kinds`: only these kinds of run (to look closer at one), with their usual weights. */
const kinds = values.kinds ? KINDS.filter(([k]) => values.kinds?.split(",").includes(k)) : KINDS;
if (!Number.isInteger(seed) || !(runs > 0) || !(killsWanted >= 0) || kinds.length === 0) {
  console.error(
    `usage: npm run chaos [-- --quick] [--seed N] [--runs N] [--kills N] [--kinds ${KINDS.map(([k]) => k).join(",")}]`,
  );
  process.exit(2);
}
console.log(
  `chaos: seed ${seed} (npm run chaos -- --seed ${seed}${values.quick ? " --quick" : ""} replays it)`,
);
const log = (s: string) => process.stderr.write(`${s}\n`);

/** The chaos queue: consumed by the Worker, its dead letters kept apart. */
const QUEUE_TOML = `[[queues.consumers]]
queue = "chaos-q"
max_batch_size = 10
max_batch_timeout = 1
max_retries = 3
dead_letter_queue = "chaos-q-dead"
`;
const SECRETS = {
  CHAOS_SECRET: `chaos-secret-${seed}-b7e1c2`,
  CHAOS_MODEL_KEY: `chaos-model-key-${seed}-9f3a`,
};

const prng = new Prng(seed);
const tmp = mkdtempSync(join(tmpdir(), "workflow-edge-chaos-"));
const t0 = Date.now();
const servers = await startChaosServers(prng.fork());
let worker: LocalWorker | null = null;
const logs: string[] = [];
try {
  log("building the Worker with the chaos workflows");
  const build = await buildRelease(
    ROOT,
    join(ROOT, "scripts/chaos/workflows"),
    join(tmp, "build"),
    QUEUE_TOML,
  );
  const serve = async () => {
    const w = await serveWorker({
      scriptPath: build.scriptPath,
      durableObjects: build.durableObjects,
      persist: join(tmp, "state"),
      vars: {
        ALLOW_PRIVATE_WEBHOOKS: "true",
        CHAOS_URL: servers.url,
        CHAOS_MODEL_URL: `${servers.url}/v1`,
        OTEL_EXPORTER_OTLP_ENDPOINT: servers.url,
        ...SECRETS,
      },
      extra: {
        // /cdn-cgi/local/email, as wrangler dev serves it.
        unsafeTriggerHandlers: true,
        queueProducers: { CHAOS_Q: { queueName: "chaos-q" } },
        queueConsumers: {
          "chaos-q": { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 3, deadLetterQueue: "chaos-q-dead" },
        },
      },
    });
    return w;
  };
  worker = await serve();
  let live = worker;
  const target: Target = {
    url: () => live.url,
    sendToQueue: (body) => live.sendToQueue("CHAOS_Q", body),
  };

  // The load: `runs` runs at a steady pace, at most five a second, over at least four seconds per
  // kill (the killer goes on while the load does: a long run has more kills than asked).
  const loadMs = Math.max(killsWanted * 4_000, runs * 200, 10_000);
  const gapMs = loadMs / runs;
  const kills: number[] = [];
  let loading = true;
  const killer = (async () => {
    const k = prng.fork();
    while (killsWanted > 0 && (loading || kills.length < killsWanted)) {
      await new Promise((r) => setTimeout(r, k.int(1_500, 6_000)));
      const dying = live;
      kills.push(Date.now());
      logs.push(...dying.logs());
      await dying.kill();
      live = await serve();
      log(
        `kill ${kills.length}: workerd SIGKILLed and started again (${((Date.now() - t0) / 1000).toFixed(0)} s)`,
      );
    }
  })();
  log(`load: ${runs} runs over about ${(loadMs / 1000).toFixed(0)} s, ${killsWanted}+ kills`);
  const picks = prng.fork();
  const started: Array<Promise<Invoked>> = [];
  for (let i = 0; i < runs; i++) {
    started.push(startOne(target, picks.pick(kinds), i, picks.fork(), seed));
    await new Promise((r) => setTimeout(r, gapMs));
  }
  const invoked = await Promise.all(started);
  loading = false;
  await killer;
  worker = live;
  log(
    `load done (${((Date.now() - t0) / 1000).toFixed(0)} s): ${kills.length} kills; faults ${JSON.stringify(servers.faults)}`,
  );

  // The drain: no more faults, every run ends.
  servers.calm();
  const ev: Evidence = {
    invoked,
    kills,
    servers,
    logs,
    secrets: Object.values(SECRETS),
  };
  const finals = await finalEnvelopes(target, ev);
  const rows: Row[] = [
    await existence(target, ev, finals),
    sideEffects(ev, finals),
    await listing(target, ev, finals),
  ];
  ev.logs.push(...live.logs());
  rows.push(await limitsAndSecrets(target, ev, finals), await deliveries(target, ev, finals));
  print(rows, invoked, kills.length);
  const broken = rows.filter((r) => r.violations.length > 0);
  if (broken.length > 0) {
    console.log(
      `\nchaos: FAILED with seed ${seed} (npm run chaos -- --seed ${seed}${values.quick ? " --quick" : ""})`,
    );
    for (const r of broken)
      for (const v of r.violations.slice(0, 20)) console.log(`  ${r.invariant.slice(0, 2)} ${v}`);
    process.exitCode = 1;
  } else
    console.log(`\nchaos: every invariant held (seed ${seed}, ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
} finally {
  await worker?.kill();
  await servers.close();
  rmSync(tmp, { recursive: true, force: true });
}

function print(rows: Row[], invoked: Invoked[], kills: number): void {
  const byKind = new Map<string, number>();
  for (const r of invoked) byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + 1);
  const fivexx = invoked.reduce((n, r) => n + r.errors.length, 0);
  console.log(
    `\n${invoked.length} runs (${[...byKind].map(([k, n]) => `${k} ${n}`).join(", ")}), ${kills} kills, faults ${JSON.stringify(servers.faults)}, ${servers.received.length} requests received, ${servers.modelCalls.length} model calls, ${fivexx} 5xx answers on the way\n`,
  );
  console.log("| invariant | checked | violations | notes |");
  console.log("|---|---|---|---|");
  for (const r of rows)
    console.log(`| ${r.invariant} | ${r.checked} | ${r.violations.length} | ${r.notes} |`);
}
