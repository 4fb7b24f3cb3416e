/**
 * A wrapper around the Worker's Durable Object namespace bindings that records the calls made on
 * each (docs/operations.md, "Jurisdictions"): local runtimes ignore jurisdictions (workerd cannot
 * make an object in one), so the tests check that each object was asked for in the right one.
 *
 * It wraps the namespaces' shared prototype, so the calls the Worker and every Durable Object of
 * this isolate make are seen alike. `jurisdiction(j)` answers a recording namespace that makes its
 * objects in the namespace itself (as a local runtime would, were it to ignore the jurisdiction).
 */
import { env } from "cloudflare:workers";

export type Binding = "RUNS" | "RUN_INDEX" | "SIGNAL_KEYS" | "FLOW_KEYS";
const BINDINGS: Binding[] = ["RUNS", "RUN_INDEX", "SIGNAL_KEYS", "FLOW_KEYS"];

export interface NamespaceCall {
  binding: Binding | "?";
  /** The jurisdiction of the namespace called; null: the binding itself. */
  jurisdiction: string | null;
  method: "jurisdiction" | "newUniqueId" | "idFromName" | "idFromString" | "get";
  /** The name, the id's hex string, or the jurisdiction asked for. */
  arg: string;
}

interface Id {
  toString(): string;
}
interface Ns {
  jurisdiction(j: string): Ns;
  newUniqueId(): Id;
  idFromName(name: string): Id;
  idFromString(id: string): Id;
  get(id: Id, options?: unknown): unknown;
}

/** Starts recording; `stop()` puts the bindings back as they were. */
export function recordNamespaceCalls(): { calls: NamespaceCall[]; stop(): void } {
  const bindings = env as unknown as Record<Binding, Ns>;
  const proto = Object.getPrototypeOf(bindings.RUNS) as Ns;
  const original = {
    jurisdiction: proto.jurisdiction,
    newUniqueId: proto.newUniqueId,
    idFromName: proto.idFromName,
    idFromString: proto.idFromString,
    get: proto.get,
  };
  // Which binding a namespace object is: a name gives each namespace its own id.
  const probe = (ns: Ns) => original.idFromName.call(ns, "\u0000which-binding").toString();
  const byProbe = new Map(BINDINGS.map((b) => [probe(bindings[b]), b]));
  const bindingOf = (ns: Ns) => byProbe.get(probe(ns)) ?? "?";
  const calls: NamespaceCall[] = [];

  proto.jurisdiction = function (this: Ns, j: string): Ns {
    const binding = bindingOf(this);
    calls.push({ binding, jurisdiction: null, method: "jurisdiction", arg: j });
    const note = (method: NamespaceCall["method"], arg: string) =>
      calls.push({ binding, jurisdiction: j, method, arg });
    return {
      jurisdiction: () => {
        throw new Error("a jurisdiction's namespace has no jurisdictions");
      },
      newUniqueId: () => {
        const id = original.newUniqueId.call(this);
        note("newUniqueId", id.toString());
        return id;
      },
      idFromName: (name) => {
        note("idFromName", name);
        return original.idFromName.call(this, name);
      },
      idFromString: (hex) => {
        note("idFromString", hex);
        return original.idFromString.call(this, hex);
      },
      get: (id, options) => {
        note("get", id.toString());
        return original.get.call(this, id, options);
      },
    };
  };
  const topLevel = (method: "newUniqueId" | "idFromName" | "idFromString" | "get") =>
    function (this: Ns, ...args: unknown[]) {
      const result = (original[method] as (...a: unknown[]) => unknown).apply(this, args);
      const arg =
        method === "idFromName" ? String(args[0]) : method === "get" ? String(args[0]) : String(result);
      calls.push({ binding: bindingOf(this), jurisdiction: null, method, arg });
      return result;
    };
  proto.newUniqueId = topLevel("newUniqueId") as Ns["newUniqueId"];
  proto.idFromName = topLevel("idFromName") as Ns["idFromName"];
  proto.idFromString = topLevel("idFromString") as Ns["idFromString"];
  proto.get = topLevel("get") as Ns["get"];
  return {
    calls,
    stop: () => Object.assign(proto, original),
  };
}
