/**
 * The workflow compiler: reads workflows/ (YAML, with node positions), checks everything
 * SPEC.md section 2 lists, and emits the Bundle the Worker imports. Node-only (uses fs and
 * the `yaml` package); nothing here ships in the Worker.
 */
import type { Bundle } from "../bundle.ts";

export interface Diagnostic {
  severity: "error" | "warning";
  /** Path as given to the user (relative to the current directory when possible). */
  file: string;
  line: number;
  col: number;
  message: string;
  /** `file:line:col: message` (warnings: `file:line:col: warning: message`). */
  text: string;
}

export interface CompileResult {
  /** null when there is any error. */
  bundle: Bundle | null;
  diagnostics: Diagnostic[];
  stats: { workflows: number; steps: number; agents: number; ms: number };
}

/** Compiles every `*.workflow.yaml` directly in `workflowsDir` and everything they reference. */
export function compileProject(_workflowsDir: string): CompileResult {
  // Placeholder until the compiler lands: an empty bundle.
  const bundle: Bundle = { format: 1, hash: "", workflows: {}, invocable: {}, agents: {}, gateway: { env: [], providers: [], groups: [] } };
  return { bundle, diagnostics: [], stats: { workflows: 0, steps: 0, agents: 0, ms: 0 } };
}
