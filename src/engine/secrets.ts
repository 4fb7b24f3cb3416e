/**
 * Which env values of a run are secret, read from the Worker's environment. Masking needs the
 * values; a secret shorter than 8 characters would mask too much (and be too weak), so it is a
 * configuration error reported before any run is created. The gateway's secrets (provider keys)
 * belong to runs that can call a model: a workflow without agent steps, in itself or in its
 * sub-workflows, never sends them anywhere, and a short provider key must not break it.
 */
import type { Bundle, CompiledWorkflow, JsonObject } from "../bundle.ts";

export const MIN_SECRET_LENGTH = 8;

export interface RunSecrets {
  /** Values to mask, non-empty. */
  values: string[];
  /** Names of secret env vars whose value is set but too short. */
  tooShort: string[];
}

export function collectSecrets(
  bundle: Bundle,
  wf: CompiledWorkflow,
  env: Record<string, unknown>,
): RunSecrets {
  const names = new Set<string>();
  for (const e of wf.env) if (e.secret) names.add(e.name);
  if (usesAgents(bundle, wf)) for (const e of bundle.gateway.env) if (e.secret) names.add(e.name);
  const values: string[] = [];
  const tooShort: string[] = [];
  for (const name of names) {
    const v = env[name];
    if (typeof v !== "string" || v === "") continue;
    if (v.length < MIN_SECRET_LENGTH) tooShort.push(name);
    else values.push(v);
  }
  return { values, tooShort };
}

const agentUse = new WeakMap<CompiledWorkflow, boolean>();

/** Whether `wf` or any sub-workflow it runs has an agent step (cached per compiled workflow). */
export function usesAgents(bundle: Bundle, wf: CompiledWorkflow): boolean {
  const known = agentUse.get(wf);
  if (known !== undefined) return known;
  agentUse.set(wf, false); // the compiler rejects recursion; this only guards the walk
  const found = wf.steps.some((s) => {
    if (s.kind === "agent") return true;
    const child = s.kind === "workflow" ? bundle.workflows[s.workflow] : undefined;
    return child ? usesAgents(bundle, child) : false;
  });
  agentUse.set(wf, found);
  return found;
}

/** The `env` namespace expressions see: declared names only, unset ones null. */
export function declaredEnv(wf: CompiledWorkflow, env: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const e of wf.env) {
    const v = env[e.name];
    out[e.name] = typeof v === "string" ? v : null;
  }
  return out;
}

/** The Worker env as plain strings (bindings such as RUNS are left out). */
export function stringEnv(env: object): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === "string") out[k] = v;
  return out;
}
