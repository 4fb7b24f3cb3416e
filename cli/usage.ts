/** What every command of the CLI shares: where it prints, and how it refuses bad usage (exit 2). */
import type { painter } from "./render.ts";

export class UsageError extends Error {}

export interface Out {
  json: boolean;
  paint: ReturnType<typeof painter>;
  print(text: string): void;
  /** Writes at once, without a line end (text as it streams); what `print` held goes out first. */
  write(text: string): void;
}

/** Exactly `n` positional arguments (`what` they are, for the message). */
export function need(args: string[], n: number, what: string): string[] {
  if (args.length < n) throw new UsageError(`missing ${what}`);
  if (args.length > n) throw new UsageError(`unexpected argument "${args[n]}"`);
  return args;
}
