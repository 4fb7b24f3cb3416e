/**
 * Each part of a case is checked in its own module, and every check must point at the exact key
 * or value of the case it is about, so they all take the same two shapes: where in the case, and
 * how to report there.
 */
import type { DataPath } from "../yaml-source.ts";

/** An error or a warning at a data path of the test file (its key or its value). */
export type Report = (path: DataPath, msg: string, part?: "key" | "value") => void;

/** The data path of something inside the case being compiled (`["cases", i, ...rest]`). */
export type CaseAt = (...rest: Array<string | number>) => DataPath;
