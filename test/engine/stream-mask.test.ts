/**
 * The streaming masker (src/engine/stream-mask.ts): whatever the chunking, what it lets out,
 * joined, is the masked whole, and no piece it lets out holds any part of a secret.
 */
import { describe, expect, it } from "vitest";
import { createMasker, MASK } from "../../src/engine/mask.ts";
import { createStreamMasker } from "../../src/engine/stream-mask.ts";

const SECRETS = ["sk-live-4f9a1c2e8b7d", "hunter2hunter2"];
const masker = createMasker(SECRETS);

function stream(chunks: string[]): string[] {
  const s = createStreamMasker(masker);
  const out = chunks.map((c) => s.push(c));
  out.push(s.flush());
  return out;
}

/** Every fragment of a secret form at least 3 characters long: none may reach a reader. */
const fragments = (masker.forms ?? []).flatMap((f) => {
  const out: string[] = [];
  for (let i = 0; i + 3 <= f.length; i++) out.push(f.slice(i, i + 3));
  return out;
});

describe("the streaming masker", () => {
  const text = `Your key is ${SECRETS[0]}, base64 ${btoa(SECRETS[0] as string)}, and the password ${SECRETS[1]} ends it.`;

  it("lets out the masked whole, split at every offset into two chunks", () => {
    for (let i = 0; i <= text.length; i++) {
      const out = stream([text.slice(0, i), text.slice(i)]);
      expect(out.join(""), `split at ${i}`).toBe(masker.maskText(text));
    }
  });

  it("never lets a piece of a secret out, split at every pair of offsets into three chunks", () => {
    for (let i = 0; i <= text.length; i += 3) {
      for (let j = i; j <= text.length; j += 2) {
        const out = stream([text.slice(0, i), text.slice(i, j), text.slice(j)]);
        expect(out.join(""), `split at ${i}, ${j}`).toBe(masker.maskText(text));
        for (const piece of out)
          for (const f of fragments)
            if (piece.includes(f) && !masker.maskText(text).includes(f))
              throw new Error(`"${f}" leaked in "${piece}" (split at ${i}, ${j})`);
      }
    }
  });

  it("lets a secret sent one character at a time out only as the mask", () => {
    const out = stream([..."key=", ...(SECRETS[0] as string), ..." done"]);
    expect(out.join("")).toBe(`key=${MASK} done`);
    for (const piece of out) expect(SECRETS[0]?.includes(piece) && piece.length > 1).toBe(false);
  });

  it("lets text out as it comes when the run has no secret", () => {
    const s = createStreamMasker(createMasker([]));
    expect(s.push("Hello")).toBe("Hello");
    expect(s.push(", world")).toBe(", world");
    expect(s.flush()).toBe("");
  });

  it("lets text that cannot be the start of a secret out at once, and holds back only what could be", () => {
    const s = createStreamMasker(masker);
    expect(s.push("Hello there, ")).toBe("Hello there, ");
    // `sk-li` could be the start of the first secret: it waits for the next chunk.
    expect(s.push("the key sk-li")).toBe("the key ");
    expect(s.push("ne is fine")).toBe("sk-line is fine");
    expect(s.flush()).toBe("");
  });
});

describe("what a stream lets out at once", () => {
  it("lets a whole secret out masked as soon as it is complete, and holds back only a possible start of one", () => {
    const stream = createStreamMasker(createMasker(["secretXY"]));
    expect(stream.push("xx secretXY")).toBe("xx ***");
    expect(stream.push(" then secr")).toBe(" then ");
    expect(stream.push("etXY!")).toBe("***!");
    expect(stream.flush()).toBe("");
  });

  it("moves a cut back past a secret it would split", () => {
    // `XXXXbb` could start the second secret: held back; the cut before it splits the first.
    const stream = createStreamMasker(createMasker(["aaaaXXXX", "XXXXbbbb"]));
    expect(stream.push("..aaaaXXXXbb")).toBe("..");
    expect(stream.push("bb")).toBe("***bbbb");
  });

  it("looks again after moving a cut: a secret overlapping the one it moved past stays whole too", () => {
    // Moving the cut before `1111BBBB` puts it inside `AAAA1111`, checked before it.
    const m = createMasker(["AAAA1111", "1111BBBB", "BBBBCCCC"]);
    const s = createStreamMasker(m);
    const out = [s.push("x"), s.push("AAAA1111BBBB"), s.push("CCCCy"), s.flush()];
    expect(out.join("")).toBe(m.maskText("xAAAA1111BBBBCCCCy"));
    for (const piece of out) expect(piece).not.toMatch(/AAAA|1111|BBBB|CCCC/);
  });

  it("lets every chunk out at once through a masker that searches no form", () => {
    const s = createStreamMasker({ maskText: (t) => t, maskJson: (v) => v });
    expect(s.push("Stryker ")).toBe("Stryker ");
    expect(s.push("was here")).toBe("was here");
  });

  it("starts afresh after flush", () => {
    const stream = createStreamMasker(createMasker(["secretXY"]));
    expect(stream.push("ab secr")).toBe("ab ");
    expect(stream.flush()).toBe("secr");
    expect(stream.push("etXY")).toBe("etXY");
  });
});
