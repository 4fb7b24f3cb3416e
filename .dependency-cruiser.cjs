/**
 * The layers of src/ (docs/architecture.md), checked by `npm run lint:layers` in `npm test`.
 * Data flows one way: the compiler writes the bundle, the runtime reads it; below the runtime's
 * shell (the run's Durable Object, the HTTP face) the engine stays pure TypeScript. Bottom to
 * top: common < bundle < engine < (gateway, mcp-client, steps) < run < triggers < (http, viewer, openapi) < app.
 * Inside the run layer, its rooms (docs/architecture.md, "The run layer's rooms"): what every room
 * shares at the top of src/run/; waits, events, keys, listing, deliveries and trace below the
 * lifecycle; start beside it; the lifecycle below the object.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      comment: "An import cycle ties its modules into one: nothing in it can be read or tested alone.",
      severity: "error",
      from: { path: "^(src|cli|scripts|bench)/" },
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
      to: {
        path: "^src/(run|triggers|http|steps|gateway|mcp-client|testing|viewer|openapi)/|^src/(app|index)\\.ts$",
      },
    },
    {
      name: "executors-below-the-run",
      comment:
        "Step executors, the model gateway and the MCP client are called by the engine: they never import the run, the HTTP face, the compiler or the test runner.",
      severity: "error",
      from: { path: "^src/(steps|gateway|mcp-client|agents)/" },
      to: { path: "^src/(run|triggers|http|testing|viewer|openapi|compiler)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "run-below-the-triggers",
      comment:
        "The run layer never imports a trigger, the HTTP face, the viewer, the compiler or the test runner: triggers reach it through start/.",
      severity: "error",
      from: { path: "^src/run/" },
      to: { path: "^src/(triggers|http|viewer|openapi|testing|compiler)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "run-rooms-below-the-lifecycle",
      comment:
        "Waits, events, the key objects, the listing, deliveries and traces are used by the lifecycle and the object: they never import either, nor start/.",
      severity: "error",
      from: { path: "^src/run/(waits|events|keys|listing|deliveries|trace)/" },
      to: { path: "^src/run/(lifecycle|object|start)/" },
    },
    {
      name: "run-shared-at-the-top",
      comment:
        "The files at the top of src/run/ (the run's document and store, its envelope and graph, the object's RPC, where objects live) are what every room shares: they import no room that decides or performs.",
      severity: "error",
      from: { path: "^src/run/[^/]+\\.ts$" },
      to: { path: "^src/run/(lifecycle|object|start)/" },
    },
    {
      name: "lifecycle-decides-the-object-performs",
      comment: "The lifecycle decides and never imports the Durable Object shell that performs it.",
      severity: "error",
      from: { path: "^src/run/lifecycle/" },
      to: { path: "^src/run/(object|start)/" },
    },
    {
      name: "start-asks-the-object",
      comment:
        "Starting runs and re-runs reach a run through its RPC (run-rpc.ts), never the lifecycle or the object.",
      severity: "error",
      from: { path: "^src/run/start/" },
      to: { path: "^src/run/(lifecycle|object)/" },
    },
    {
      name: "triggers-start-runs",
      comment:
        "Each trigger turns its event into one start request for the run layer: it imports start/ and what the run shares, never the lifecycle, the object, the HTTP face, the viewer, the compiler or the test runner.",
      severity: "error",
      from: { path: "^src/triggers/" },
      to: {
        path: "^src/run/(lifecycle|object)/|^src/(http|viewer|openapi|testing|compiler)/|^src/(app|index)\\.ts$",
      },
    },
    {
      name: "a-trigger-is-its-own-room",
      comment: "One trigger never imports another (what they share is at the top of src/triggers/).",
      severity: "error",
      from: { path: "^src/triggers/([^/]+)/" },
      to: { path: "^src/triggers/[^/]+/", pathNot: "^src/triggers/$1/" },
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
        "The workflow-test runner drives the run lifecycle in memory: never the Durable Object shell, the HTTP face (what both answer with is in common/ and triggers/), the Worker app or the viewer.",
      severity: "error",
      from: { path: "^src/testing/" },
      to: { path: "^src/run/object/|^src/(app|index)\\.ts$|^src/(http|viewer|openapi)/" },
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
    exclude: { path: "^(src/generated|bench/tmp)/" },
    // TypeScript 7 has no JS API yet: sources are parsed with swc, which reads TypeScript as written.
    parser: "swc",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    moduleSystems: ["es6"],
  },
};
