/**
 * Where the Durable Objects that hold a workflow's runs live (docs/operations.md, "Jurisdictions").
 * A root workflow's `residency` puts every one of them in that jurisdiction — the run's own object
 * (its deliveries with it), its flow keys, its signal keys, its listing shards and directory — and
 * every object is reached through this module, so the decision is made in one place.
 *
 * A run is found from its id alone: the id of a run in a jurisdiction starts with it
 * (`eu-<64 hex>`; a run in none is the 64 hex digits of its object, as before), and a key or a
 * listing object is named from its workflow, whose residency the caller knows.
 *
 * Local runtimes ignore jurisdictions: workerd answers "Jurisdiction restrictions are not
 * implemented", and there the object is made in the namespace itself, so `wrangler dev` and the
 * tests run such workflows; test/run/jurisdiction.workerd.test.ts checks the calls made on each
 * namespace.
 */
import { type Residency, RUN_ID_PATTERN } from "../bundle.ts";

/** What this module asks of a Durable Object namespace binding (typed plainly: the runtime's types are Worker-only). */
export interface ObjectNamespace<Id extends { toString(): string } = { toString(): string }> {
  jurisdiction(name: Residency): ObjectNamespace<Id>;
  newUniqueId(): Id;
  idFromName(name: string): Id;
  idFromString(id: string): Id;
  get(id: Id): unknown;
}

const RUN_ID = new RegExp(RUN_ID_PATTERN);

/** A run id as issued: its jurisdiction (null: none) and its object's hex id, or null for anything else. */
export function parseRunId(runId: string): { residency: Residency | null; hex: string } | null {
  const m = RUN_ID.exec(runId);
  if (!m) return null;
  return { residency: (m[1] as Residency | undefined) ?? null, hex: m[2] as string };
}

/** The jurisdiction a run's id names (null: none, or not a run id). */
export function residencyOfRun(runId: string): Residency | null {
  return parseRunId(runId)?.residency ?? null;
}

/** The jurisdiction a workflow's runs are kept in (null: none). */
export function residencyOf(wf: { residency?: Residency }): Residency | null {
  return wf.residency ?? null;
}

/** The id a run whose object has `hex` for id is known by. */
export function runIdOf(hex: string, residency: Residency | null): string {
  return residency ? `${residency}-${hex}` : hex;
}

/**
 * `use` applied to the namespace's subnamespace for `residency` (or to the namespace itself for
 * none). Where the runtime cannot make objects in a jurisdiction (local workerd), to the namespace.
 */
export function placed<T, Id extends { toString(): string }>(
  ns: ObjectNamespace<Id>,
  residency: Residency | null,
  use: (ns: ObjectNamespace<Id>) => T,
): T {
  if (residency === null) return use(ns);
  try {
    return use(ns.jurisdiction(residency));
  } catch (e) {
    if (e instanceof Error && /Jurisdiction restrictions are not implemented/.test(e.message)) return use(ns);
    throw e;
  }
}

/** The stub of the object named `name` in `ns`, in `residency`. */
export function namedStub<T>(ns: ObjectNamespace, residency: Residency | null, name: string): T {
  return placed(ns, residency, (n) => n.get(n.idFromName(name))) as unknown as T;
}
