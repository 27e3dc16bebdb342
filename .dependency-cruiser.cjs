// The layering of docs/architecture.md, checked by `npm run lint:deps` (part of `npm test`), which runs
// this file: dependency-cruiser's CLI refuses Node 20, its API does not. Type-only imports are seen
// (tsPreCompilationDeps): `import type` is a dependency unless a rule says otherwise.
/** Service folders: one deployable process each; they share services/protocol and services/runtime only. */
const SERVICE = "^services/(host|agent|cli|start|tools|web)/";
/** pg and the migration runner: the database is reached through services/host/store only. */
const PG = "^node_modules/(pg|pg-pool|@types/pg|node-pg-migrate)/";
const TESTS = "\\.test\\.ts$";

/** @type {import('dependency-cruiser').IConfiguration} */
const config = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycles, type-only ones included.",
      severity: "error",
      from: { path: "^(services|machines|tests|bench)/" },
      to: { circular: true },
    },
    {
      name: "machines-pure",
      comment: "machines/ imports only xstate, other machines/ files and (as types) services/protocol/.",
      severity: "error",
      from: { path: "^machines/", pathNot: TESTS },
      to: { pathNot: ["^machines/", "^node_modules/xstate/", "^services/protocol/"] },
    },
    {
      name: "machines-protocol-types-only",
      comment: "machines/ takes only types from the contract (`import type`).",
      severity: "error",
      from: { path: "^machines/", pathNot: TESTS },
      to: { path: "^services/protocol/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "protocol-standalone",
      comment: "services/protocol/ is the shared contract: it imports no service folder.",
      severity: "error",
      from: { path: "^services/protocol/" },
      to: { path: SERVICE },
    },
    {
      name: "runtime-standalone",
      comment:
        "services/runtime/ (logging, environment and config-file reading, secret redaction) is shared by every process: it imports no service folder, and the wire contract does not import it.",
      severity: "error",
      from: { path: "^services/runtime/" },
      to: { path: SERVICE },
    },
    {
      name: "protocol-not-runtime",
      comment: "services/protocol/ is the wire contract only: the browser console imports it, so it takes nothing of a process's runtime.",
      severity: "error",
      from: { path: "^services/protocol/" },
      to: { path: "^services/runtime/" },
    },
    {
      name: "protocol-machines-types-only",
      comment: "services/protocol/ takes only types from machines/.",
      severity: "error",
      from: { path: "^services/protocol/" },
      to: { path: "^machines/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "services-apart",
      comment: "No service folder imports another; they share services/protocol/ and services/runtime/ only.",
      severity: "error",
      from: { path: SERVICE },
      to: { path: SERVICE, pathNot: "^services/$1/" },
    },
    {
      name: "machines-only-from-export-tool",
      comment: "Of services/tools/, only machines-export.ts reads machines/.",
      severity: "error",
      from: { path: "^services/tools/", pathNot: "^services/tools/machines-export\\.ts$" },
      to: { path: "^machines/" },
    },
    {
      name: "host-top-below-rooms",
      comment:
        "services/host/*.ts (clock, ids, cron-schedule) may be imported by every room, so they import no room; main.ts and the create-db-main.ts entry import anything, host-config.ts the rooms' readers of the environment.",
      severity: "error",
      from: {
        path: "^services/host/[^/]+\\.ts$",
        pathNot: ["^services/host/(main|host-config|create-db-main)\\.ts$", TESTS],
      },
      to: { path: "^services/host/(bus|sessions|store|tools)/" },
    },
    {
      name: "host-wiring-only-from-main",
      comment:
        "services/host/wiring/ assembles the host from its rooms, step by step; only main.ts imports it, and no room imports it back.",
      severity: "error",
      from: { path: "^services/", pathNot: ["^services/host/main\\.ts$", "^services/host/wiring/"] },
      to: { path: "^services/host/wiring/" },
    },
    {
      name: "host-store-tools-not-up",
      comment: "bus -> sessions -> store/tools, never back up: store/ and tools/ import neither sessions/ nor bus/.",
      severity: "error",
      from: { path: "^services/host/(store|tools)/" },
      to: { path: "^services/host/(sessions|bus)/" },
    },
    {
      name: "host-sessions-not-bus",
      comment: "sessions/ does not import bus/.",
      severity: "error",
      from: { path: "^services/host/sessions/" },
      to: { path: "^services/host/bus/" },
    },
    {
      name: "host-tools-not-store",
      comment: "tools/ does not import store/: the tool pipeline in sessions/ records results.",
      severity: "error",
      from: { path: "^services/host/tools/" },
      to: { path: "^services/host/store/" },
    },
    {
      name: "file-tools-only-in-the-helper",
      comment:
        "The file tools (workspace-files.ts) run only inside the sandboxed file helper, never in the host process: outside tools/file-helper/ only types may be imported (docs/security.md).",
      severity: "error",
      from: {
        path: "^services/",
        pathNot: ["^services/host/tools/file-helper/", "^services/host/tools/workspace-files\\.ts$", TESTS],
      },
      to: { path: "^services/host/tools/workspace-files\\.ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "pg-only-in-store",
      comment:
        "pg and node-pg-migrate only under services/host/store/ (and migrations/, tests/, bench/).",
      severity: "error",
      from: {
        pathNot: ["^services/host/store/", "^migrations/", "^tests/", "^bench/"],
      },
      to: { path: PG },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: ["^services/", "^machines/", "^tests/", "^bench/", "^migrations/", "^node_modules/"],
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};

module.exports = config;

/** Cruises the project's folders with these rules; prints the violations, exit code 1 if any. */
async function check() {
  const { cruise } = await import("dependency-cruiser");
  const { default: extractTSConfig } = await import("dependency-cruiser/config-utl/extract-ts-config");
  const roots = process.argv.length > 2 ? process.argv.slice(2) : ["services", "machines", "tests", "bench", "migrations"];
  const result = await cruise(
    roots,
    { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden }, outputType: "err" },
    {},
    { tsConfig: extractTSConfig(config.options.tsConfig.fileName) },
  );
  process.stdout.write(String(result.output));
  process.exitCode = result.exitCode > 0 ? 1 : 0;
}

if (require.main === module) {
  check().catch((err) => {
    console.error(err);
    process.exitCode = 2;
  });
}
