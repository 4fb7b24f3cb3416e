import { describe, expect, it } from "vitest";
import { call, type Envelope } from "../../worker/harness.ts";

const FORM = "application/x-www-form-urlencoded";

function postForm(name: string, body: string) {
  return call(`/invoke/${name}`, {
    method: "POST",
    headers: { "content-type": FORM, prefer: "wait=10" },
    body,
  });
}

describe("form bodies", () => {
  it("keeps a lone `payload` that does not parse as a JSON object as a string field (no 400)", async () => {
    // docs: the payload is unwrapped only when "it parses as a JSON object"; otherwise the form
    // is the params object of strings, whatever the field's text starts with.
    for (const text of ["{not json", '{"a":1', "{}}"]) {
      const res = await postForm("trig-form", `payload=${encodeURIComponent(text)}`);
      expect(res.status, text).toBe(200);
      expect(((await res.json()) as Envelope).params, text).toEqual({ payload: text });
    }
  });

  it("reads a form-typed body that is JSON but not an object (curl -d '[1,2]') as JSON: 400 invalid_json", async () => {
    for (const text of ["[1,2]", " [] "]) {
      const res = await postForm("trig-form", text);
      expect(res.status, text).toBe(400);
      expect(((await res.json()) as { code: string }).code, text).toBe("invalid_json");
    }
  });
});
