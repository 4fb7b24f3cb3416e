/**
 * The RPC surface of a flow key's Durable Object (flow-keys.ts), apart from the class so the run
 * object and the Worker import no other Worker class; and how one is named: one object per
 * workflow and rendered key, whatever settings share that key (docs/triggers.md, "Shaping bursts").
 * How it is reached is run-rpc.ts's (`flowKeyStub`).
 */
import type { JsonObject } from "../../bundle.ts";
import type { AdmitRequest, AdmitVerdict, FlowSettings, TurnVerdict } from "./flow-key-types.ts";

export type { AdmitRequest, AdmitVerdict, FlowSettings, TurnVerdict } from "./flow-key-types.ts";

export interface FlowKeyRpc {
  /** A new invoke of this key (a new run that starts or waits, a joined group, or a refusal). */
  admit(req: AdmitRequest): Promise<AdmitVerdict>;
  /** A run waiting at this key asks whether its turn came (it was admitted here before). */
  turn(runId: string): Promise<TurnVerdict>;
  /** A run ended or was canceled: its slot, place, group and cancel_on watch go. */
  release(runId: string): Promise<void>;
  /** `cancel_on`: cancels every run of this key watching `signal`; their ids. */
  cancelFor(signal: string): Promise<string[]>;
  /** `cancel_on` of a run whose other settings live in other keys: it may be canceled by these signals here. */
  watch(runId: string, signals: string[]): Promise<void>;
  /** A debounce's or batch's open group as it stands (null: none for this run): what its queued run's envelope shows. */
  group(runId: string): Promise<{ params: JsonObject; coalesced: number; due: number } | null>;
}

/** What a flow key hands a run whose turn came: a debounce's or batch's params, how many invokes it stands for. */
export interface BeginPayload {
  /** The flow key that says the run may go on (the run passes its keys in order). */
  gate: string;
  params?: JsonObject;
  coalesced?: number;
}

/** The name of the object of `workflow`'s key `key` ("" when the key is absent or renders to nothing). */
export function flowKeyName(workflow: string, key: string): string {
  return `${workflow}\n${key}`;
}

/** A run's flow key as the run keeps it: its name, the settings that live there, and its cancel_on signals. */
export interface FlowGate {
  name: string;
  settings: FlowSettings;
  cancelOn: string[];
}
