/**
 * A compiled test file is the contract between the build, which checks it, and the workflow-test
 * runner (src/testing/), which runs it: the runner reads these shapes only, never the YAML, and
 * keeps the source file so a failed expectation can point at its line.
 */
import type { Json, JsonObject, MockedStepKind } from "../../bundle.ts";
import type { DataPath, SourceFile } from "../yaml-source.ts";

export interface MockAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: Json;
  output?: Json;
  reply?: string;
  usage?: { tokens_in?: number; tokens_out?: number };
  /** Agent: a model turn that calls tools (`name` as the model is offered it). */
  tool_calls?: Array<{ name: string; arguments?: Json }>;
  /** Tool: an MCP `tools/call` result, or its short forms `text` and `result`. */
  content?: Json[];
  structuredContent?: Json;
  isError?: boolean;
  text?: string;
  result?: Json;
  delay_s?: number;
  error?: string;
}

export interface MockSpec {
  kind: MockedStepKind | "tool";
  /** A tool mock's tool (its key is `<step key>/tools/<tool>`); null for a step mock. */
  tool: string | null;
  /** One per request; with `repeat` the only answer serves every request. */
  answers: MockAnswer[];
  repeat: boolean;
}

export interface ApprovalDecision {
  decision: "approved" | "rejected" | "timeout";
  comment: string | null;
  /** Virtual seconds after the request before the reviewer decides (0: at once). */
  after_s: number;
}

/** The decisions of one approval key, one per approval asked (or one for all with `repeat`). */
export interface ApprovalSpec {
  decisions: ApprovalDecision[];
  repeat: boolean;
}

export interface TestCase {
  index: number;
  name: string;
  /** Data path of the case in its file (`["cases", i]`). */
  path: DataPath;
  params: JsonObject;
  env: Record<string, string>;
  /** `request.headers` as given (names as written), or null. */
  requestHeaders: Record<string, string> | null;
  /** By step path as written (tool calls: `<step>/tools/<tool>`). */
  mocks: Record<string, MockSpec>;
  /** Human decisions by `<step>/tools/<tool>` or `<step>/needs_human`, as written. */
  approvals: Record<string, ApprovalSpec>;
  expect: JsonObject;
  /** Keys of `expect.steps` that name tool calls (`<step>/tools/<tool>`): matched against the calls' requests. */
  toolPaths: string[];
  /** `expect.assert`, step ids quoted for JMESPath, in file order. */
  asserts: Array<{ source: string; expr: string; index: number }>;
}

export interface TestSuite {
  file: SourceFile;
  /** Key in `bundle.workflows` of the workflow under test; null when it did not resolve. */
  workflowKey: string | null;
  cases: TestCase[];
}
