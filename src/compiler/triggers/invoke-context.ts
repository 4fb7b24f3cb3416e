/**
 * What the compilers of a workflow's triggers share (invoke.ts and its siblings invoke-auth.ts,
 * invoke-schedule.ts, invoke-notify.ts): the file and its diagnostics, the workflow's facts, and
 * how each reports an error and compiles a template.
 */
import type { EnvDecl, JsonSchema, Template } from "../../bundle.ts";
import type { DiagnosticSink } from "../diagnostics.ts";
import type { WranglerFacts } from "../wrangler-config.ts";
import type { DataPath, SourceFile } from "../yaml-source.ts";

export interface InvokeContext {
  file: SourceFile;
  sink: DiagnosticSink;
  name: string;
  /** Invocable (`workflows/*.workflow.yaml`). */
  invocable: boolean;
  /** Set when the file is used as a sub-workflow: says by whom. */
  subNote: (() => string) | null;
  /** Env declared by the file (empty for sub-workflows). */
  declared: EnvDecl[];
  /** Checks a read of env var `name` at `path` (declared, root only). */
  useEnv(name: string, path: DataPath): void;
  stepIds: Set<string>;
  paramsSchema: JsonSchema;
  wrangler: () => WranglerFacts;
}

/** Reports an error at a data path of the file. */
export type Report = (path: DataPath, msg: string, part?: "key" | "value") => void;

/** Compiles a template whose expressions may read only `roots` (`url`: a secret env var may be read). */
export type TriggerTemplate = (
  value: unknown,
  path: DataPath,
  where: string,
  roots: Array<"params" | "env" | "step" | "request">,
  url?: boolean,
) => Template;
