/**
 * What ktsu's file forms mean at run time (docs/file-format.md, "ktsu files compile unchanged"):
 * `output.schema` on a webhook step validates its `{status, headers, body}`, a secret written
 * `env:NAME` is sent as the secret and masked like one, and a sub-workflow file's top-level
 * `webhooks: suppress` silences its webhooks even when the calling step says `execute`.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { run, targetLog, uniqueKey } from "../harness.ts";

const SECRET = (env as unknown as Record<string, string>).WEBHOOK_SECRET as string;

describe("ktsu file forms at run time", () => {
  it("sends env:NAME as the secret, masks it, validates output.schema and honours webhooks: suppress", async () => {
    const key = uniqueKey("ktsu-ok");
    const e = await run("ktsu-compat", { key, code: 200 });
    expect(e.status).toBe("complete");
    const log = await targetLog(key);
    // Only the root's webhook was sent: the sub-workflow file says suppress.
    expect(log).toHaveLength(1);
    expect(log[0]?.headers["x-secret"]).toBe(SECRET);
    expect(JSON.stringify(e)).not.toContain(SECRET);
    const quiet = e.steps[1];
    expect(quiet.steps[0]).toMatchObject({
      id: "post",
      status: "skipped",
      output: { skipped: true, reason: "webhooks_suppressed" },
    });
  });

  it("fails a webhook step whose output does not match its output.schema", async () => {
    const key = uniqueKey("ktsu-mismatch");
    const e = await run("ktsu-compat", { key, code: 201 });
    expect(e.status).toBe("failed");
    expect(e.error).toMatchObject({ code: "output_schema_mismatch", step: "post" });
    expect(e.error.message).toMatch(/^the step output does not match its output\.schema: \/status: /);
    expect(e.steps[0]).toMatchObject({ status: "failed", output: null });
  });
});
