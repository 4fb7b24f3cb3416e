/**
 * `POST /invoke/{name}` (docs/http-api.md): `errors[].path` of a 422 is a JSON Pointer into
 * the body, and an odd but well-formed JSON body never ends as a 500.
 */
import { describe, expect, it } from "vitest";
import { invoke } from "../../worker/harness.ts";

interface Problem {
  code: string;
  errors?: Array<{ path: string; message: string }>;
}

describe("POST /invoke/{name} params checks", () => {
  it("answers errors[].path as JSON Pointers into the body (RFC 6901)", async () => {
    const res = await invoke("schema-pointers", { "e f": { 'g"h': 1 }, "a/b~c": 2 });
    expect(res.status).toBe(422);
    const body = (await res.json()) as Problem;
    expect(body.code).toBe("invalid_params");
    expect((body.errors ?? []).map((e) => e.path).sort()).toEqual(["/a~1b~0c", '/e f/g"h']);
  });

  it("answers 422, not 500, for a property name holding a lone surrogate escape", async () => {
    const res = await invoke("schema-pointers", '{"\\ud800": 1}');
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as Problem;
    expect(body.code).toBe("invalid_params");
    expect(body.errors?.[0]?.message).toMatch(/lone surrogate/);
  });
});
