/**
 * `workflow-edge init NAME` (docs/cli.md): writes a first workflow and its test, which pass
 * `validate` and `test` as written, and refuses to overwrite either file.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ApiError } from "./api.ts";
import { type Out, UsageError } from "./usage.ts";

/** `init NAME`: a workflow and its test that pass `validate` and `test`. */
export function init(out: Out, name: string): number {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name))
    throw new UsageError(`workflow names are a-z, 0-9 and -, not "${name}"`);
  const wf = join("workflows", `${name}.workflow.yaml`);
  const test = join("workflows", "tests", `${name}.test.yaml`);
  for (const f of [wf, test])
    if (existsSync(f)) throw new ApiError("file_exists", `${f} already exists`, 0, null);
  mkdirSync(dirname(test), { recursive: true });
  writeFileSync(
    wf,
    `# yaml-language-server: $schema=../schema/workflow.schema.json
kind: workflow
name: ${name}
version: 0.1.0
description: Says hello (written by workflow-edge init; make it yours).

params:
  schema:
    type: object
    required: [name]
    properties:
      name: { type: string, minLength: 1 }

pipeline:
  - id: greet
    transform:
      inputs:
        - from: "{{ {greeting: join('', ['Hello, ', params.name, '!'])} }}"
`,
  );
  writeFileSync(
    test,
    `# yaml-language-server: $schema=../../schema/test.schema.json
kind: test
workflow: ${name}
cases:
  - name: greets by name
    params: { name: Ada }
    expect:
      status: complete
      output: { result: { greeting: "Hello, Ada!" } }
`,
  );
  out.print(out.json ? JSON.stringify({ workflow: wf, test }) : `wrote ${wf}\nwrote ${test}`);
  return 0;
}
