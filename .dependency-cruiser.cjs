/**
 * The layers of src/ (docs/architecture.md), checked by `npm run lint:layers` in `npm test`.
 * Data flows one way: the compiler writes the bundle, the runtime reads it; below the runtime's
 * shell (the run's Durable Object, the HTTP face) the engine stays pure TypeScript. Bottom to
 * top: common < bundle < engine < (gateway, mcp, steps) < run < (http, viewer, openapi, schedules) < app.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      comment: "An import cycle ties its modules into one: nothing in it can be read or tested alone.",
      severity: "error",
      from: { path: "^(src|cli)/" },
      to: { circular: true },
    },
    {
      name: "common-is-the-floor",
      comment:
        "src/common holds what every layer shares; it imports nothing of the project but the bundle's types.",
      severity: "error",
      from: { path: "^src/common/" },
      to: { path: "^src/", pathNot: "^src/(common/|bundle(\\.ts$|/))" },
    },
    {
      name: "bundle-is-the-contract",
      comment: "src/bundle.ts is the one contract between compiler and runtime: it depends on neither.",
      severity: "error",
      from: { path: "^src/bundle(\\.ts$|/)" },
      to: { path: "^src/", pathNot: "^src/(common/|bundle(\\.ts$|/))" },
    },
    {
      name: "engine-is-pure",
      comment:
        "The engine (scheduler, expressions, masking, budget) is pure TypeScript over RunHost: no step, run, HTTP or compiler module.",
      severity: "error",
      from: { path: "^src/engine/" },
      to: { path: "^src/", pathNot: "^src/(engine/|common/|bundle(\\.ts$|/))" },
    },
    {
      name: "compiler-reads-no-runtime",
      comment:
        "The compiler imports the bundle, the pure engine and shared pieces, never the runtime (run, HTTP, steps, gateway, MCP), the test runner or the viewer.",
      severity: "error",
      from: { path: "^src/compiler/" },
      to: { path: "^src/(run|http|steps|gateway|mcp|testing|viewer|openapi)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "executors-below-the-run",
      comment:
        "Step executors, the model gateway and the MCP client are called by the engine: they never import the run, the HTTP face, the compiler or the test runner.",
      severity: "error",
      from: { path: "^src/(steps|gateway|mcp|agents)/" },
      to: { path: "^src/(run|http|testing|viewer|openapi|compiler)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "run-below-the-face",
      comment:
        "The run lifecycle and its Durable Object shell never import the HTTP face, the viewer, the compiler or the test runner.",
      severity: "error",
      from: { path: "^src/run/" },
      to: { path: "^src/(http|viewer|openapi|testing|compiler|schedules)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "schedules-are-a-trigger",
      comment:
        "Cron schedules start runs through the run layer like an invoke does, but they are not HTTP: they import neither the HTTP face, the viewer, OpenAPI nor the app.",
      severity: "error",
      from: { path: "^src/schedules/" },
      to: { path: "^src/(http|viewer|openapi|testing|compiler)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "face-not-the-app",
      comment: "HTTP helpers, the viewer and OpenAPI are imported by the app, not the other way round.",
      severity: "error",
      from: { path: "^src/(http|viewer|openapi)/" },
      to: { path: "^src/(app|index)\\.ts$|^src/testing/|^src/compiler/" },
    },
    {
      name: "test-runner-drives-the-lifecycle",
      comment:
        "The workflow-test runner drives the run lifecycle in memory: never the Durable Object shell, the Worker app or the viewer.",
      severity: "error",
      from: { path: "^src/testing/" },
      to: { path: "^src/run/run-object\\.ts$|^src/(app|index)\\.ts$|^src/(viewer|openapi)/" },
    },
    {
      name: "runtime-has-no-build-libraries",
      comment: "YAML and TOML parsing are build time only: the Worker bundle never carries them.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(compiler|testing)/" },
      to: { path: "node_modules/(yaml|smol-toml|esbuild|commander)/" },
    },
    {
      name: "runtime-has-no-node-builtins",
      comment:
        "What runs in the Worker uses web APIs only (node: modules are for the compiler and the test runner).",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(compiler|testing)/" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "cli-speaks-http-only",
      comment: "The CLI is a client of the HTTP API: it shares nothing with the Worker but the JSON Schemas.",
      severity: "error",
      from: { path: "^cli/" },
      to: { path: "^src/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^src/generated/" },
    // TypeScript 7 has no JS API yet: sources are parsed with swc, which reads TypeScript as written.
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    moduleSystems: ["es6"],
  },
};
