// Temporary folders for a unit test file: each `tmp()` is a fresh folder under the OS temp folder,
// all removed after each test.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";

/** `tmp()` makes a folder named after `label`; every folder it made is removed after each test. */
export function tempDirs(label: string): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const d = mkdtempSync(path.join(os.tmpdir(), `pihost-${label}-`));
    dirs.push(d);
    return d;
  };
}
