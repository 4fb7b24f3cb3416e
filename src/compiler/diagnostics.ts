/**
 * Collects every error and warning of a compile run. The compiler never stops at the first
 * problem: each check reports here and carries on, and the CLI prints the whole list sorted by
 * file and position, in the `file:line:col: message` form editors and terminals link to.
 */
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

export interface Position {
  line: number;
  col: number;
}

export class DiagnosticSink {
  readonly list: Diagnostic[] = [];

  error(file: string, at: Position, message: string): void {
    this.add("error", file, at, message);
  }

  warning(file: string, at: Position, message: string): void {
    this.add("warning", file, at, message);
  }

  get errorCount(): number {
    return this.list.filter((d) => d.severity === "error").length;
  }

  /** Sorted by file, then position; errors before warnings at the same spot. */
  sorted(): Diagnostic[] {
    return [...this.list].sort(
      (a, b) =>
        a.file.localeCompare(b.file) ||
        a.line - b.line ||
        a.col - b.col ||
        (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1),
    );
  }

  private add(severity: Diagnostic["severity"], file: string, at: Position, message: string): void {
    const prefix = `${file}:${at.line}:${at.col}: `;
    const text = severity === "warning" ? `${prefix}warning: ${message}` : `${prefix}${message}`;
    // The same problem can be reached twice (a file used by two parents); report it once.
    if (this.list.some((d) => d.text === text)) return;
    this.list.push({ severity, file, line: at.line, col: at.col, message, text });
  }
}
