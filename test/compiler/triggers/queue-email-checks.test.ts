/**
 * Build checks of the queue and email triggers (docs/triggers.md, "Queues" and "Email"): the
 * consumer wrangler.toml must declare (with the lines to add), one workflow per queue, address
 * patterns, one workflow per address, and what a run started by a message may read.
 */
import { afterAll, describe, expect, it } from "vitest";
import { matchesAddress, sharedAddress } from "../../../src/common/email-address.ts";
import { compileFiles, expectDiagnostic, expectOnlyError, removeProjects } from "../temp-project.ts";

afterAll(removeProjects);

/** A root workflow named `name` with the given `invoke:` lines (line 6 on) and step. */
function wf(name: string, invoke: string, step = "  - id: a\n    transform: {ops: []}\n"): string {
  return `kind: workflow
name: ${name}
params:
  schema: {type: object}
invoke:
${invoke}pipeline:
${step}`;
}

const CONSUMER = '[[queues.consumers]]\nqueue = "orders"\ndead_letter_queue = "orders-dead"\n';

describe("invoke.queue", () => {
  it("compiles the queue a consumer of wrangler.toml reads", () => {
    const p = compileFiles({ "a.workflow.yaml": wf("a", "  queue: orders\n"), "wrangler.toml": CONSUMER });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows["a.workflow.yaml"]?.queue).toBe("orders");
  });

  it("names the [[queues.consumers]] lines to add when wrangler.toml does not consume the queue", () => {
    const p = compileFiles({ "a.workflow.yaml": wf("a", "  queue: orders\n"), "wrangler.toml": "" });
    expectOnlyError(
      p,
      "a.workflow.yaml",
      6,
      10,
      /^queue `orders` is not consumed by this Worker: \S*wrangler.toml has no `\[\[queues.consumers\]\]` for it; add:\n\[\[queues.consumers\]\]\nqueue = "orders"\nmax_batch_size = 100\nmax_retries = 3\ndead_letter_queue = "orders-dead"$/,
    );
  });

  it("warns when the consumer keeps no dead-letter queue", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf("a", "  queue: orders\n"),
      "wrangler.toml": '[[queues.consumers]]\nqueue = "orders"\n',
    });
    expect(p.errors).toEqual([]);
    expectDiagnostic(
      p,
      "warning",
      "a.workflow.yaml",
      6,
      10,
      /has no `dead_letter_queue`.*deleted after its retries/,
    );
  });

  it("refuses a queue named by two workflows, at the second", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf("a", "  queue: orders\n"),
      "b.workflow.yaml": wf("b", "  queue: orders\n"),
      "wrangler.toml": CONSUMER,
    });
    expectOnlyError(
      p,
      "b.workflow.yaml",
      6,
      10,
      /^queue `orders` already starts workflow `a`: a queue starts one workflow/,
    );
  });

  it("refuses a name Cloudflare does not accept", () => {
    const p = compileFiles({ "a.workflow.yaml": wf("a", "  queue: Orders_In\n"), "wrangler.toml": CONSUMER });
    expectDiagnostic(p, "error", "a.workflow.yaml", 6, 10, /lower-case letters, digits and `-`/);
  });

  it("lets a queue-fed workflow read request.queue, message_id and attempts, and no other workflow", () => {
    const reads =
      '  - id: a\n    transform:\n      inputs: [{from: "{{ request.message_id }}"}]\n      ops: []\n';
    const ok = compileFiles({
      "a.workflow.yaml": wf("a", "  queue: orders\n", reads),
      "wrangler.toml": CONSUMER,
    });
    expect(ok.errors).toEqual([]);
    const http = compileFiles({
      "a.workflow.yaml": wf("a", "  headers: [X-A]\n", reads),
      "wrangler.toml": "",
    });
    expectDiagnostic(
      http,
      "error",
      "a.workflow.yaml",
      10,
      23,
      /`request.message_id` does not exist \(a run started by a queue message has it: set `invoke.queue`\)/,
    );
  });

  it("is for invocable workflows only", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf("a", "  headers: []\n", "  - id: s\n    workflow: sub/s.workflow.yaml\n"),
      "sub/s.workflow.yaml": `kind: workflow\nname: s\nvisibility: sub-workflow\ninvoke:\n  queue: orders\npipeline:\n  - id: a\n    transform: {ops: []}\n`,
      "wrangler.toml": CONSUMER,
    });
    expectDiagnostic(p, "error", "sub/s.workflow.yaml", 5, 3, /`invoke.queue` is for invocable workflows/);
  });
});

describe("invoke.email", () => {
  it("compiles recipient and sender patterns, lower-cased", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf(
        "a",
        '  email:\n    to: ["Support@Example.com", "*@tickets.example.com"]\n    from: ["*@customer.example"]\n',
      ),
    });
    expect(p.errors).toEqual([]);
    expect(p.result.bundle?.workflows["a.workflow.yaml"]?.email).toEqual({
      to: ["support@example.com", "*@tickets.example.com"],
      from: ["*@customer.example"],
    });
  });

  it("refuses patterns that are not local@domain with whole-part wildcards", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf(
        "a",
        '  email:\n    to: ["support", "sup*@example.com", "a@exa*.com", "a@example.*"]\n',
      ),
    });
    expectDiagnostic(
      p,
      "error",
      "a.workflow.yaml",
      7,
      10,
      /^address pattern `support`: an address pattern is `local@domain`$/,
    );
    expectDiagnostic(p, "error", "a.workflow.yaml", 7, 21, /`\*` stands for a whole local part/);
    expectDiagnostic(p, "error", "a.workflow.yaml", 7, 41, /`\*` stands for a whole domain label/);
    expectDiagnostic(p, "error", "a.workflow.yaml", 7, 55, /the top-level domain cannot be `\*`/);
  });

  it("refuses two workflows taking one address, naming an address both take", () => {
    const p = compileFiles({
      "a.workflow.yaml": wf("a", '  email:\n    to: ["*@tickets.example.com"]\n'),
      "b.workflow.yaml": wf("b", '  email:\n    to: ["billing@example.com", "help@tickets.example.com"]\n'),
    });
    expectOnlyError(
      p,
      "b.workflow.yaml",
      7,
      33,
      /^address pattern `help@tickets.example.com` overlaps `\*@tickets.example.com` of workflow `a` \(both take `help@tickets.example.com`\): an address starts one workflow$/,
    );
  });
});

describe("address patterns", () => {
  it("match a whole local part or one domain label, whatever the case", () => {
    expect(matchesAddress("*@tickets.example.com", "Jo.Doe+x@Tickets.Example.com")).toBe(true);
    expect(matchesAddress("support@*.example.com", "support@eu.example.com")).toBe(true);
    expect(matchesAddress("support@*.example.com", "support@a.eu.example.com")).toBe(false);
    expect(matchesAddress("support@example.com", "sales@example.com")).toBe(false);
  });

  it("overlap only where one address fits both", () => {
    expect(sharedAddress("*@example.com", "support@*.com")).toBe("support@example.com");
    expect(sharedAddress("*@a.example.com", "*@example.com")).toBeNull();
    expect(sharedAddress("x@*.example.com", "y@*.example.com")).toBeNull();
  });
});
