/**
 * The small rules behind tool access (docs/agents-and-tools.md): which allowlist entry governs a tool, how
 * approval timeouts are written, and which patterns the build accepts.
 */
import { describe, expect, it } from "vitest";
import type { CompiledAllowEntry } from "../../src/bundle.ts";
import { isAllowPattern, parseDuration } from "../../src/compiler/servers.ts";
import { governingEntry, patternMatches } from "../../src/engine/allowlist.ts";

const gate = { onReject: "fail", timeoutS: null, timeoutBehavior: "fail", notify: null } as const;

describe("allowlists", () => {
  it("match an exact name, a prefix* and *", () => {
    expect(patternMatches("echo", "echo")).toBe(true);
    expect(patternMatches("echo", "echo2")).toBe(false);
    expect(patternMatches("crm-read-*", "crm-read-user")).toBe(true);
    expect(patternMatches("crm-read-*", "crm-write")).toBe(false);
    expect(patternMatches("*", "anything")).toBe(true);
  });

  it("let an entry that asks for approval win over a plain one that also matches", () => {
    const allow: CompiledAllowEntry[] = [
      { pattern: "*", approval: null },
      { pattern: "delete-*", approval: gate },
    ];
    expect(governingEntry(allow, "delete-user")?.approval).toBe(gate);
    expect(governingEntry(allow, "read-user")?.approval).toBeNull();
  });

  it("admit nothing that no entry matches, and everything without access", () => {
    expect(governingEntry([{ pattern: "echo", approval: null }], "get-env")).toBeUndefined();
    expect(governingEntry(null, "get-env")).toEqual({ pattern: "*", approval: null });
  });

  it("accept only a trailing * in the build", () => {
    for (const ok of ["echo", "crm-*", "*"]) expect(isAllowPattern(ok), ok).toBe(true);
    for (const bad of ["", "a*b", "**", "*x"]) expect(isAllowPattern(bad), bad).toBe(false);
  });
});

describe("approval timeouts", () => {
  it("read Go-style durations and seconds", () => {
    expect(parseDuration("30m")).toBe(1800);
    expect(parseDuration("1h30m")).toBe(5400);
    expect(parseDuration("90s")).toBe(90);
    expect(parseDuration("45")).toBe(45);
    expect(parseDuration(120)).toBe(120);
    for (const bad of ["soon", "0", 0, -5, "1x", ""]) expect(parseDuration(bad), String(bad)).toBeNull();
  });
});
