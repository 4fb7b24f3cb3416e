/**
 * One string field of a JSON document read as the document arrives in pieces (docs/agent-callers.md,
 * "Streaming"): a model that answers `{"answer": "Hel` has already written `Hel` of `answer`, and
 * a caller that shows only that field can show it now. `push` takes the next piece of the text
 * and gives the field's newly decoded characters (escapes decoded, a surrogate pair never split);
 * everything else in the document is walked over, not built. Text before the document's first
 * `{` (a model's code fence) is skipped. Only the field's first occurrence counts; once its string
 * has closed, nothing more comes.
 */

type Frame = { kind: "obj"; key: string | null; expectKey: boolean } | { kind: "arr" };

type Mode =
  | "before" // before the document's first `{`
  | "value" // where a value (or, in an object, a key) may start
  | "string" // inside a string
  | "escape" // after a backslash in a string
  | "unicode" // inside \uXXXX
  | "scalar" // inside a number or a literal
  | "done"; // the document (or the field) has ended

const ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

export class JsonFieldStream {
  private mode: Mode = "before";
  private readonly stack: Frame[] = [];
  /** The string being read: a key (collected), the field (emitted), or another value (skipped). */
  private reading: "key" | "field" | "skip" = "skip";
  private key = "";
  private hex = "";
  /** A high surrogate decoded from `\uXXXX`, held until its low half comes. */
  private held = "";
  private found = false;

  private readonly path: readonly string[];

  constructor(path: readonly string[]) {
    this.path = path;
  }

  /** The field's text decoded from `piece`, the next part of the document ("" when none). */
  push(piece: string): string {
    let out = "";
    for (let i = 0; i < piece.length && this.mode !== "done"; i++) {
      const ch = piece[i] as string;
      switch (this.mode) {
        case "before":
          if (ch === "{") this.open({ kind: "obj", key: null, expectKey: true });
          break;
        case "string":
          if (ch === '"') out += this.closeString();
          else if (ch === "\\") this.mode = "escape";
          else out += this.take(ch);
          break;
        case "escape":
          if (ch === "u") {
            this.mode = "unicode";
            this.hex = "";
          } else {
            this.mode = "string";
            out += this.take(ESCAPES[ch] ?? ch);
          }
          break;
        case "unicode":
          this.hex += ch;
          if (this.hex.length === 4) {
            this.mode = "string";
            out += this.take(String.fromCharCode(Number.parseInt(this.hex, 16) || 0));
          }
          break;
        case "scalar":
          if (ch === "," || ch === "}" || ch === "]" || /\s/.test(ch)) {
            this.mode = "value";
            i--; // the delimiter is read as structure
          }
          break;
        case "value":
          this.structure(ch);
          break;
      }
    }
    return out;
  }

  /** Whether the field's whole string has been read. */
  get complete(): boolean {
    return this.found && this.reading !== "field" && this.mode === "done";
  }

  private open(frame: Frame) {
    this.stack.push(frame);
    this.mode = "value";
  }

  private structure(ch: string) {
    const top = this.stack.at(-1);
    if (/\s/.test(ch) || ch === ":") return;
    if (ch === ",") {
      if (top?.kind === "obj") top.expectKey = true;
      return;
    }
    if (ch === "}" || ch === "]") {
      this.stack.pop();
      if (this.stack.length === 0) this.mode = "done";
      return;
    }
    if (top?.kind === "obj" && top.expectKey) {
      if (ch === '"') {
        this.reading = "key";
        this.key = "";
        this.mode = "string";
      }
      return;
    }
    if (top?.kind === "obj") top.expectKey = false;
    if (ch === "{") return this.open({ kind: "obj", key: null, expectKey: true });
    if (ch === "[") return this.open({ kind: "arr" });
    if (ch === '"') {
      this.reading = !this.found && this.atPath() ? "field" : "skip";
      if (this.reading === "field") this.found = true;
      this.mode = "string";
      return;
    }
    this.mode = "scalar";
  }

  /** Whether a value starting now is the field: every enclosing frame is an object whose key is the path's. */
  private atPath(): boolean {
    if (this.stack.length !== this.path.length) return false;
    return this.stack.every((f, i) => f.kind === "obj" && f.key === this.path[i]);
  }

  private take(ch: string): string {
    if (this.reading === "key") {
      this.key += ch;
      return "";
    }
    if (this.reading !== "field") return "";
    const code = ch.charCodeAt(0);
    if (code >= 0xd800 && code <= 0xdbff) {
      const out = this.held;
      this.held = ch;
      return out;
    }
    const out = this.held + ch;
    this.held = "";
    return out;
  }

  /** Ends the string being read; a field's held half surrogate (a lone one, as JSON allows) goes out. */
  private closeString(): string {
    const top = this.stack.at(-1);
    if (this.reading === "key" && top?.kind === "obj") {
      top.key = this.key;
      top.expectKey = false;
    }
    if (this.reading === "field") {
      // The field has ended: nothing after it is wanted.
      const rest = this.held;
      this.reading = "skip";
      this.held = "";
      this.mode = "done";
      return rest;
    }
    this.reading = "skip";
    this.mode = "value";
    return "";
  }
}
