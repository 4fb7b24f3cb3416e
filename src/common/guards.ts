/**
 * Type guards every layer needs (parsed YAML, JSON bodies, step outputs), written once.
 */
import type { Json, JsonObject } from "../bundle.ts";

/** A plain object: not null, not an array. */
export function isObject(v: Json | undefined): v is JsonObject;
export function isObject(v: unknown): v is Record<string, unknown>;
export function isObject(v: unknown): boolean {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}
