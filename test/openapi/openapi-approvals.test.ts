/**
 * The approval endpoints in the OpenAPI document (docs/agents-and-tools.md): both forms, their bodies and their
 * problems, and the step record's new fields; the whole document still validates as OpenAPI 3.1.
 */
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { expect, it } from "vitest";
import { compileProject } from "../../src/compiler/index.ts";
import { buildOpenApi } from "../../src/openapi/build.ts";

it("documents listing and deciding approvals, and tool_calls / annotations on step records", async () => {
  const result = compileProject(fileURLToPath(new URL("../fixtures/workflows", import.meta.url)));
  if (!result.bundle) throw new Error("fixtures do not compile");
  // biome-ignore lint/suspicious/noExplicitAny: inspected field by field
  const doc = buildOpenApi(result.bundle) as any;
  const v = await new Validator().validate(doc);
  expect(v.errors ?? []).toEqual([]);
  expect(v.valid).toBe(true);

  expect(doc.paths["/runs/{run_id}/approvals"].get.operationId).toBe("listApprovals");
  const decide = doc.paths["/runs/{run_id}/approvals/{approval_id}"].post;
  expect(Object.keys(decide.responses).sort()).toEqual(["200", "400", "401", "404", "405", "409", "500"]);
  expect(decide.requestBody.content["application/json"].schema).toEqual({
    $ref: "#/components/schemas/Decision",
  });
  expect(doc.paths["/runs/{run_id}/steps/{step}/approval/decide"].post.operationId).toBe(
    "decideStepApproval",
  );
  const schemas = doc.components.schemas;
  expect(schemas.Decision.properties.decision.enum).toEqual(["approved", "rejected"]);
  expect(schemas.StepRecord.required).toContain("tool_calls");
  expect(schemas.StepRecord.properties.status.enum).toContain("pending_approval");
  expect(schemas.Approval.required).toContain("expires_at");
});
