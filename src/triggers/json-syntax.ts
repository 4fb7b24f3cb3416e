/**
 * Where a request body stops being JSON, for an `invalid_json` that says where to look without
 * quoting the body (the parser's own message quotes it, and a body may hold anything).
 */

/**
 * ` at line L, column C` (1-based, in UTF-16 units like an editor's) of where `text`, which
 * JSON.parse refused, stops being JSON; "" if no place is found.
 */
export function whereJsonBreaks(text: string): string {
  const offset = jsonErrorOffset(text);
  if (offset === null) return "";
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf("\n") + 1;
  return ` at line ${before.split("\n").length}, column ${offset - lineStart + 1}`;
}

/**
 * Where JSON.parse stopped reading `text`: the offset of the first character that cannot continue
 * a JSON value (text.length when the text ends too early), or null when it finds none. V8 names a
 * position for some mistakes only (none for an unquoted value, the commonest), so the grammar is
 * walked here, once JSON.parse has refused the body; the nesting is already known to be shallow.
 */
function jsonErrorOffset(text: string): number | null {
  let i = 0;
  const stop = (): never => {
    throw new JsonStop(i);
  };
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text.charAt(i))) i++;
  };
  const expect = (c: string) => {
    if (text.charAt(i) !== c) stop();
    i++;
  };
  const digits = () => {
    const from = i;
    while (i < text.length && text.charAt(i) >= "0" && text.charAt(i) <= "9") i++;
    if (i === from) stop();
  };
  const string = () => {
    expect('"');
    for (;;) {
      if (i >= text.length) stop();
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) stop();
      if (c === 0x5c) {
        i++;
        if (text.charAt(i) === "u") {
          for (let k = 0; k < 4; k++) {
            i++;
            if (!/[0-9a-fA-F]/.test(text.charAt(i))) stop();
          }
        } else if (i >= text.length || !'"\\/bfnrt'.includes(text.charAt(i))) stop();
      }
      i++;
    }
    i++;
  };
  const members = (close: string, member: () => void) => {
    i++;
    space();
    if (text.charAt(i) === close) {
      i++;
      return;
    }
    for (;;) {
      member();
      space();
      if (text.charAt(i) === close) break;
      expect(",");
      space();
    }
    i++;
  };
  const value = (): void => {
    space();
    const c = text.charAt(i);
    if (c === "{")
      members("}", () => {
        string();
        space();
        expect(":");
        value();
      });
    else if (c === "[") members("]", value);
    else if (c === '"') string();
    else if (c === "-" || (c >= "0" && c <= "9")) {
      if (c === "-") i++;
      if (text.charAt(i) === "0") i++;
      else digits();
      if (text.charAt(i) === ".") {
        i++;
        digits();
      }
      if (text.charAt(i) === "e" || text.charAt(i) === "E") {
        i++;
        if (text.charAt(i) === "+" || text.charAt(i) === "-") i++;
        digits();
      }
    } else {
      const word = ["true", "false", "null"].find((w) => w[0] === c);
      if (!word) stop();
      for (const w of word as string) expect(w);
    }
  };
  try {
    value();
    space();
    if (i < text.length) stop();
    return null;
  } catch (e) {
    if (e instanceof JsonStop) return Math.min(e.offset, text.length);
    throw e;
  }
}

class JsonStop {
  readonly offset: number;
  constructor(offset: number) {
    this.offset = offset;
  }
}
