/**
 * Under `npm start`, a workflow file that does not build: every request is answered at once with
 * 503 build_failed naming each error's file:line:col (src/http/build-failed.ts), and the dev build
 * keeps the last good bundle with the errors noted (scripts/build.ts with WORKFLOW_EDGE_DEV=1),
 * where a plain build writes nothing and fails.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { buildFailed, buildFailedAnswer } from "../../src/http/build-failed.ts";

const ROOT = resolve(import.meta.dirname, "../..");

function build(dir: string, out: string, dev: boolean) {
  return spawnSync(process.execPath, [join(ROOT, "scripts/build.ts"), dir, "--out", out], {
    encoding: "utf8",
    env: { ...process.env, WORKFLOW_EDGE_DEV: dev ? "1" : "" },
  });
}

describe("a build that fails under npm start", () => {
  it("answers 503 build_failed with every error at its file:line:col", async () => {
    const problem = buildFailed({
      buildErrors: [
        "workflows/a.workflow.yaml:3:7: unknown field `pipline`; did you mean `pipeline`?",
        "workflows/b.workflow.yaml:12:5: step `x` depends on unknown step `y`",
      ],
    });
    expect(problem).not.toBeNull();
    const res = (problem as NonNullable<typeof problem>).toResponse();
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as { code: string; errors: Array<{ path: string; message: string }> };
    expect(body.code).toBe("build_failed");
    expect(body.errors).toEqual([
      { path: "workflows/a.workflow.yaml:3:7", message: "unknown field `pipline`; did you mean `pipeline`?" },
      { path: "workflows/b.workflow.yaml:12:5", message: "step `x` depends on unknown step `y`" },
    ]);
  });

  it("shows a browser's page load a page with every error, and still answers 503", async () => {
    const problem = buildFailed({
      buildErrors: [
        "workflows/a.workflow.yaml:3:7: unknown field `<pipline>`",
        "workflows/b.workflow.yaml:1:1: bad",
      ],
    }) as NonNullable<ReturnType<typeof buildFailed>>;
    const page = buildFailedAnswer(
      problem,
      new Request("http://localhost/", { headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" } }),
    );
    expect(page.status).toBe(503);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await page.text();
    expect(html).toContain("<h1>The workflows do not build</h1>");
    expect(html).toContain(
      "<li><code>workflows/a.workflow.yaml:3:7</code>: unknown field `&lt;pipline&gt;`</li>",
    );
    expect(html).toContain("<li><code>workflows/b.workflow.yaml:1:1</code>: bad</li>");
  });

  it("keeps problem+json for a client that asks for JSON, and for anything but a GET", async () => {
    const problem = buildFailed({ buildErrors: ["workflows/a.workflow.yaml:3:7: bad"] }) as NonNullable<
      ReturnType<typeof buildFailed>
    >;
    for (const req of [
      new Request("http://localhost/", { headers: { accept: "application/json" } }),
      new Request("http://localhost/", { headers: { accept: "application/json, text/html" } }),
      new Request("http://localhost/invoke/a", { method: "POST", headers: { accept: "text/html" } }),
    ]) {
      const res = buildFailedAnswer(problem, req);
      expect(res.status).toBe(503);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
  });

  it("answers as usual when the build passed", () => {
    expect(buildFailed({})).toBeNull();
    expect(buildFailed({ buildErrors: [] })).toBeNull();
  });

  it("keeps the last good bundle with the errors noted in the dev build, and writes nothing in a plain one", () => {
    const dir = mkdtempSync(join(tmpdir(), "build-failed-"));
    const workflows = join(dir, "workflows");
    cpSync(join(ROOT, "test/fixtures/workflows/basic.workflow.yaml"), join(workflows, "basic.workflow.yaml"));
    const out = join(dir, "bundle.json");
    expect(build(workflows, out, false).status).toBe(0);
    const good = readFileSync(out, "utf8");

    writeFileSync(join(workflows, "broken.workflow.yaml"), "kind: workflow\nname: broken\npipline: []\n");
    const plain = build(workflows, out, false);
    expect(plain.status).toBe(1);
    expect(readFileSync(out, "utf8")).toBe(good);

    const dev = build(workflows, out, true);
    expect(dev.status).toBe(0);
    expect(dev.stderr).toContain("503 build_failed");
    const kept = JSON.parse(readFileSync(out, "utf8")) as { buildErrors: string[]; invocable: object };
    expect(kept.invocable).toEqual(JSON.parse(good).invocable);
    expect(kept.buildErrors.length).toBeGreaterThan(0);
    for (const e of kept.buildErrors) expect(e).toMatch(/broken\.workflow\.yaml:\d+:\d+: /);

    // Fixed: the next build writes a bundle without errors.
    writeFileSync(
      join(workflows, "broken.workflow.yaml"),
      readFileSync(join(workflows, "basic.workflow.yaml"), "utf8").replace(/name: basic/, "name: broken"),
    );
    expect(build(workflows, out, true).status).toBe(0);
    expect(JSON.parse(readFileSync(out, "utf8")).buildErrors).toBeUndefined();
  });
});
