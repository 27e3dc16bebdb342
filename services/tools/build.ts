// `npm run build`: the production build the image runs (docs/operations.md "Start (containers)").
// esbuild turns the host, the worker and `pihost` into one ESM file each under dist/ (our code and
// the packages it uses, but for RUNTIME_EXTERNALS, which the image's production dependencies hold),
// prebuilds the file helper's program, and Vite builds the web console into dist/web.
import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Plugin, transform } from "esbuild";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const DIST = path.join(repoRoot, "dist");
/** Node 20 here, the image's LTS (Dockerfile) and everything in between run the output. */
const TARGET = "node20";

/** The entry points: `node dist/host.js`, `node dist/agent.js`, `node dist/pihost.js`. */
export const ENTRIES = {
  host: "services/host/main.ts",
  agent: "services/agent/main.ts",
  pihost: "services/cli/main.ts",
} as const;
/**
 * The file helper's program, prebuilt: helper-bundle.ts bundles it at run time (with its banner,
 * into PI_DATA_DIR) exactly as it bundles helper-main.ts from the sources.
 */
export const FILE_HELPER = {
  source: "services/host/tools/file-helper/helper-main.ts",
  out: "file-helper.js",
};
/** The one reference of helper-bundle.ts to the helper's source, turned into the prebuilt file. */
const HELPER_BUNDLE = "services/host/tools/file-helper/helper-bundle.ts";
const HELPER_REFERENCE = 'new URL("./helper-main.ts", import.meta.url)';

/**
 * A module's `import.meta.url` and `import.meta.dirname` stay those of its source file (as if it ran
 * from services/), computed from the bundle's own URL at run time: package.json and migrations/
 * are found where the image puts them, beside dist/, as in the repository.
 */
function keepModuleLocations(): Plugin {
  return {
    name: "pihost-module-locations",
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, async (args) => {
        const rel = path.relative(repoRoot, args.path).split(path.sep).join("/");
        let source = await fs.readFile(args.path, "utf8");
        if (rel === HELPER_BUNDLE) {
          // A changed reference must fail the build, not ship a host whose file tools cannot start.
          if (source.split(HELPER_REFERENCE).length !== 2)
            throw new Error(`${HELPER_BUNDLE}: expected exactly one ${HELPER_REFERENCE}`);
          source = source.replace(HELPER_REFERENCE, `new URL("./${FILE_HELPER.out}", import.meta.url)`);
          return { contents: source, loader: "ts" };
        }
        if (!source.includes("import.meta") || rel.startsWith(".."))
          return { contents: source, loader: "ts" };
        const { code } = await transform(source, {
          loader: "ts",
          format: "esm",
          target: TARGET,
          define: { "import.meta.url": "__pihostModuleUrl", "import.meta.dirname": "__pihostModuleDir" },
        });
        const header = [
          'import { fileURLToPath as __pihostFileUrlToPath } from "node:url";',
          `const __pihostModuleUrl = new URL(${JSON.stringify(`../${rel}`)}, import.meta.url).href;`,
          "const __pihostModuleDir = __pihostFileUrlToPath(new URL('.', __pihostModuleUrl)).replace(/\\/$/, '');",
        ].join("\n");
        return { contents: `${header}\n${code}`, loader: "js", resolveDir: path.dirname(args.path) };
      });
    },
  };
}

async function buildServices(outDir: string): Promise<void> {
  await build({
    absWorkingDir: repoRoot,
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, src]) => [name, src])),
    outdir: outDir,
    outExtension: { ".js": ".js" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: TARGET,
    // Packages are bundled in too: loading them from node_modules cost the host about 0.8 s of CPU
    // per start and the worker about 0.5 s (hundreds of small ESM files resolved one by one; typebox
    // and node-pg-migrate lead), about three times what the bundle costs (docs/performance.md
    // "Start-up"). Only what finds its own files at run time stays outside: esbuild (its binary),
    // playwright-core (BrowserPreview, loaded on first use) and pg's optional native driver.
    external: RUNTIME_EXTERNALS,
    // CommonJS packages in an ESM bundle call `require` for Node's built-ins.
    banner: {
      js: 'import { createRequire as __pihostCreateRequire } from "node:module";\nconst require = __pihostCreateRequire(import.meta.url);',
    },
    sourcemap: "linked",
    legalComments: "linked",
    logLevel: "warning",
    plugins: [keepModuleLocations()],
  });
  // The helper runs in the sandbox, which sees no node_modules: its packages are bundled in. No
  // banner: helper-bundle.ts adds it when it bundles this file at run time.
  await build({
    absWorkingDir: repoRoot,
    entryPoints: [FILE_HELPER.source],
    outfile: path.join(outDir, FILE_HELPER.out),
    bundle: true,
    platform: "node",
    format: "esm",
    target: TARGET,
    legalComments: "none",
    logLevel: "warning",
  });
  // `pihost` as an installed program: `node dist/pihost.js` or the file itself.
  const cli = path.join(outDir, "pihost.js");
  await fs.writeFile(cli, `#!/usr/bin/env node\n${await fs.readFile(cli, "utf8")}`);
  await fs.chmod(cli, 0o755);
}

/** Packages the bundles import from node_modules at run time (production dependencies). */
export const RUNTIME_EXTERNALS = ["esbuild", "playwright-core", "pg-native"];

/** The console's static files (PI_WEB_WS_URL and PI_WEB_PREFIX are read now, as by `npm run web:build`). */
async function buildWeb(outDir: string): Promise<void> {
  const { build: viteBuild } = await import("vite");
  await viteBuild({
    configFile: path.join(repoRoot, "services/web/vite.config.ts"),
    build: { outDir: path.join(outDir, "web"), emptyOutDir: true },
    logLevel: "warn",
  });
}

/**
 * Builds into `outDir` (default dist/): any folder directly in the repository, since each module's
 * location is computed as `../<its source path>` from the bundle (the test suite builds its own copy
 * into .test-dist/, tests/support/global-setup.ts, so a test rebuilding dist/ never pulls a running
 * host's files away).
 */
export async function buildAll(opts: { web: boolean; outDir?: string }): Promise<void> {
  const outDir = opts.outDir ?? DIST;
  if (path.dirname(path.resolve(outDir)) !== repoRoot)
    throw new Error(`the build goes into a folder directly in ${repoRoot}, not ${outDir}`);
  await fs.rm(outDir, { recursive: true, force: true });
  await buildServices(outDir);
  if (opts.web) await buildWeb(outDir);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const started = performance.now();
  await buildAll({ web: !process.argv.includes("--no-web") });
  process.stdout.write(
    `built ${path.relative(process.cwd(), DIST)}/ in ${Math.round(performance.now() - started)} ms\n`,
  );
}
