/**
 * The docs a newcomer walks (README.md, docs/*.md) hold together: every relative link names a
 * file that exists, every `#anchor` a heading of that page, and the README stays a front page.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .replace(/^#+\s*/, "")
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");
}

function anchors(file: string): Set<string> {
  const out = new Set<string>();
  let fence = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fence = !fence;
    else if (!fence && /^#{1,6} /.test(line)) out.add(anchorOf(line));
  }
  return out;
}

function links(file: string): string[] {
  const text = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string);
}

describe("the documentation", () => {
  it("has a README of at most 300 lines", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300);
  });

  for (const page of PAGES) {
    it(`${page}: every relative link resolves`, () => {
      const broken: string[] = [];
      for (const link of links(join(ROOT, page))) {
        if (/^[a-z][a-z+.-]*:/i.test(link) || link.startsWith("/")) continue;
        const [path, anchor] = link.split("#") as [string, string | undefined];
        const target = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path);
        if (!existsSync(target)) broken.push(`${link} (no file ${relative(ROOT, target)})`);
        else if (anchor && target.endsWith(".md") && !anchors(target).has(anchor))
          broken.push(`${link} (no heading)`);
      }
      expect(broken).toEqual([]);
    });
  }
});
