// `npm run machines:export`: writes docs/machines/<id>.json and <id>.svg for every machine exported by
// machines/*.machine.ts. `--check` regenerates in memory and exits 1 listing stale, missing or left-over
// files (what CI runs through tests/machines-export.test.ts). The conversion itself is machines/export.ts.
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { instance } from "@viz-js/viz";
import type { AnyStateMachine } from "xstate";
import { isStateMachine, machineToDot, machineToJson } from "../../machines/export.ts";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const machinesDir = path.join(repoRoot, "machines");
export const diagramsDir = path.join(repoRoot, "docs/machines");

/** Every machine exported by `<dir>/*.machine.ts`, files and exports in name order. Refuses two machines with one id. */
export async function loadMachines(dir: string = machinesDir): Promise<AnyStateMachine[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".machine.ts")).sort();
  const byId = new Map<string, AnyStateMachine>();
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as Record<string, unknown>;
    for (const name of Object.keys(mod).sort()) {
      const value = mod[name];
      if (!isStateMachine(value)) continue;
      const seen = byId.get(value.id);
      if (seen !== undefined && seen !== value) {
        throw new Error(
          `two machines have the id "${value.id}" (${file} exports ${name}); ids name the files`,
        );
      }
      byId.set(value.id, value);
    }
  }
  return [...byId.values()];
}

/** The files docs/machines/ should hold, by file name: `<id>.json` and `<id>.svg` per machine. */
export async function renderArtifacts(machines: AnyStateMachine[]): Promise<Map<string, string>> {
  const viz = await instance();
  const out = new Map<string, string>();
  for (const machine of [...machines].sort((a, b) => a.id.localeCompare(b.id))) {
    out.set(`${machine.id}.json`, machineToJson(machine));
    const svg = viz.renderString(machineToDot(machine), { format: "svg", engine: "dot" });
    out.set(`${machine.id}.svg`, svg.endsWith("\n") ? svg : `${svg}\n`);
  }
  return out;
}

export interface Staleness {
  stale: string[];
  missing: string[];
  /** .json/.svg files no machine produces any more (a removed or renamed machine). */
  extra: string[];
}

/** Compares the expected files with what `dir` holds; all three lists empty means up to date. */
export async function compareArtifacts(
  expected: Map<string, string>,
  dir: string = diagramsDir,
): Promise<Staleness> {
  const present = await listArtifacts(dir);
  const result: Staleness = { stale: [], missing: [], extra: [] };
  for (const [name, text] of expected) {
    if (!present.includes(name)) result.missing.push(name);
    else if ((await readFile(path.join(dir, name), "utf8")) !== text) result.stale.push(name);
  }
  result.extra = present.filter((name) => !expected.has(name));
  return result;
}

/** Writes the expected files and removes left-over ones; returns the names it changed. */
export async function writeArtifacts(
  expected: Map<string, string>,
  dir: string = diagramsDir,
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const { stale, missing, extra } = await compareArtifacts(expected, dir);
  for (const name of [...stale, ...missing]) await writeFile(path.join(dir, name), expected.get(name)!);
  for (const name of extra) await rm(path.join(dir, name));
  return [...stale, ...missing, ...extra].sort();
}

async function listArtifacts(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith(".json") || f.endsWith(".svg")).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes("--check");
  const expected = await renderArtifacts(await loadMachines());
  const rel = path.relative(process.cwd(), diagramsDir) || ".";
  if (check) {
    const { stale, missing, extra } = await compareArtifacts(expected);
    const problems = [
      ...stale.map((f) => `stale:   ${rel}/${f}`),
      ...missing.map((f) => `missing: ${rel}/${f}`),
      ...extra.map((f) => `extra:   ${rel}/${f}`),
    ];
    if (problems.length === 0) {
      console.log(`${rel}: ${expected.size} files up to date`);
      return 0;
    }
    console.error(`${problems.join("\n")}\nrun \`npm run machines:export\` and commit the result`);
    return 1;
  }
  const changed = await writeArtifacts(expected);
  console.log(
    `${rel}: ${expected.size} files, ${changed.length} changed${changed.length ? `: ${changed.join(", ")}` : ""}`,
  );
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
