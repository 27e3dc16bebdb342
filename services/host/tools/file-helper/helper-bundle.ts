// The file helper's program as one self-contained ESM file, built from helper-main.ts with esbuild
// once per host process, into `<dataDir>/sandbox-helper/` (0755, the file 0444, written atomically):
// the folder every helper sandbox binds read-only.
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { oncePerKey } from "../once-per-key.ts";

const ENTRY = fileURLToPath(new URL("./helper-main.ts", import.meta.url));
/** CommonJS dependencies (picomatch) call require() for Node's own modules. */
const BANNER =
  'import { createRequire as __pihostCreateRequire } from "node:module";\nconst require = __pihostCreateRequire(import.meta.url);';

export interface HelperBundle {
  /** The folder to bind read-only into the sandbox (at its own path). */
  dir: string;
  /** The program: `<dir>/file-helper-<sha>.mjs`. */
  file: string;
}

/** The bundle under `dataDir`, built on the first call of this process (later calls share it). */
export function helperBundle(dataDir: string): Promise<HelperBundle> {
  return built(path.resolve(dataDir));
}
// A failed build is not remembered: the next call tries again.
const built = oncePerKey(buildBundle);

async function buildBundle(dataDir: string): Promise<HelperBundle> {
  const out = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    write: false,
    logLevel: "silent",
    banner: { js: BANNER },
    legalComments: "none",
  });
  const code = out.outputFiles[0]!.contents;
  const sha = createHash("sha256").update(code).digest("hex").slice(0, 16);
  const dir = path.join(dataDir, "sandbox-helper");
  await fs.mkdir(dir, { recursive: true, mode: 0o755 });
  await fs.chmod(dir, 0o755);
  const file = path.join(dir, `file-helper-${sha}.mjs`);
  const current = await fs.readFile(file).catch(() => null);
  if (!current?.equals(code)) {
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.writeFile(tmp, code, { mode: 0o444 });
    await fs.rename(tmp, file);
  }
  await fs.chmod(file, 0o444);
  return { dir, file };
}
