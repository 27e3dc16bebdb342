// The production build (`npm run build`, services/tools/build.ts) is what the image runs: the host,
// the worker and `pihost` as JavaScript under dist/ that node runs without tsx, the file helper
// prebuilt, the web console's static files; and README's walk-through passes against that host and
// worker exactly as against the sources.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildAll, DIST, ENTRIES, FILE_HELPER, RUNTIME_EXTERNALS } from "../../services/tools/build.ts";
import { hostEnv, REPO_ROOT, spawnTs, workerEnv } from "../support/processes.ts";
import { describeWalkthrough } from "../support/walkthrough.ts";

beforeAll(async () => {
  await buildAll({ web: true });
}, 120_000);

describe("npm run build", () => {
  it("is the package's build script", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8"));
    expect(pkg.scripts.build).toBe("tsx services/tools/build.ts");
    expect(readFileSync(path.join(REPO_ROOT, ".gitignore"), "utf8")).toMatch(/^dist\/$/m);
  });

  it("writes one JavaScript file per entry point with its packages inside, but for the run-time externals", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    for (const name of RUNTIME_EXTERNALS)
      expect(
        Object.keys(pkg.dependencies).concat("pg-native"),
        `${name} is a production dependency`,
      ).toContain(name);
    for (const name of Object.keys(ENTRIES)) {
      const file = path.join(DIST, `${name}.js`);
      const code = readFileSync(file, "utf8");
      // What a bundle still imports by name: Node's built-ins and RUNTIME_EXTERNALS, nothing else.
      const imported = new Set(
        [...code.matchAll(/^(?:import|export)\s[^;\n]*?from\s*"([^"./][^"]*)";?$/gm)].map((m) => m[1]!),
      );
      expect(imported.size, name).toBeGreaterThan(0);
      for (const spec of imported)
        expect(
          spec.startsWith("node:") ||
            builtinModules.includes(spec) ||
            RUNTIME_EXTERNALS.some((e) => spec === e || spec.startsWith(`${e}/`)),
          `${name} imports ${spec}`,
        ).toBe(true);
      expect(code, name).not.toMatch(/from "pg"|from "@nats-io\/transport-node"|from "typebox"/);
      // Nothing of tsx, no TypeScript source loaded.
      expect(code, name).not.toMatch(/from "tsx|\.ts"\)/);
    }
    expect(readFileSync(path.join(DIST, "pihost.js"), "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(path.join(DIST, "pihost.js")).mode & 0o111).toBe(0o111);
    // The file helper runs in the sandbox, which has no node_modules: its packages are inside.
    const helper = readFileSync(path.join(DIST, FILE_HELPER.out), "utf8");
    expect(helper).not.toMatch(/from "picomatch"/);
    expect(readFileSync(path.join(DIST, "host.js"), "utf8")).toContain(`"./${FILE_HELPER.out}"`);
    expect(existsSync(path.join(DIST, "web/index.html"))).toBe(true);
  });

  it("keeps each module's own location: the built host finds package.json and migrations/ beside dist/", () => {
    const code = readFileSync(path.join(DIST, "host.js"), "utf8");
    expect(code).toContain('"../services/host/store/migrate.ts"');
    expect(code).toContain('"../services/host/main.ts"');
    const version = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).version;
    const out = execFileSync(process.execPath, [path.join(DIST, "pihost.js"), "--version"], {
      cwd: "/",
      encoding: "utf8",
    });
    expect(out.trim()).toBe(`pihost ${version} (protocol 1)`);
  });
});

describeWalkthrough("README walk-through against the production build (node dist/host.js, dist/agent.js)", {
  host: (s) => spawnTs("dist/host.js", hostEnv(s), [], { runner: "node" }),
  worker: (s) => spawnTs("dist/agent.js", workerEnv(s), [], { runner: "node" }),
});
