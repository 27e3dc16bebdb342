// Where a Docker engine runs (`docker info` answers): the image is built and docker-compose.yml
// started exactly as docs/operations.md "Start (containers)" says, in a copy of this checkout, then
// README's walk-through runs against it as that section's "README's walk-through against it" says.
// Skipped where no engine runs (this project's machines have only the client; the image's content
// is proven there by `npm run image:proof`).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/processes.ts";
import { fencedBlock } from "./support/readme.ts";

const engine = spawnSync("docker", ["info"], { stdio: "ignore", timeout: 10_000 }).status === 0;
const operations = readFileSync(path.join(REPO_ROOT, "docs/operations.md"), "utf8");
const readme = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");

/** A copy of the checkout's files (tracked and new, not ignored), so the steps change nothing here. */
function copyOfCheckout(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-compose-"));
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: REPO_ROOT })
    .toString()
    .split("\0")
    .filter(Boolean);
  const tar = spawnSync("tar", ["-c", "--null", "-T", "-", "-f", "-"], {
    cwd: REPO_ROOT,
    input: files.join("\0"),
  });
  spawnSync("tar", ["-x", "-f", "-"], { cwd: dir, input: tar.stdout });
  return dir;
}

function sh(script: string, cwd: string, env: Record<string, string> = {}, timeout = 900_000): string {
  return execFileSync("bash", ["-euo", "pipefail", "-c", script], {
    cwd,
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout,
  });
}

describe.skipIf(!engine)("docker compose up, then README's walk-through (a Docker engine)", () => {
  it("starts healthy and runs the walk-through against the containers", { timeout: 1_800_000 }, () => {
    const dir = copyOfCheckout();
    const compose = "docker compose --env-file .compose/compose.env";
    try {
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "ignore" });
      const steps = fencedBlock(
        operations,
        "### Generate the certificates, the NATS configuration and the secrets",
      );
      expect(steps).toBeTruthy();
      sh(String(steps).replace(/^docker compose .* up --build --wait$/m, ""), dir);
      const walk = String(fencedBlock(operations, "### README's walk-through against it"));
      expect(walk).toContain("PI_MODEL_PROVIDERS=scripted");
      // The section's block (the trial's settings, `up --wait`, the CLI's environment, the
      // workspace), then README's script from PROJECT= on, its last line through the container.
      const script = String(fencedBlock(readme, "### The script"));
      const tail = script
        .slice(script.indexOf("PROJECT="))
        .replace(/^cat "\$WS\/GREETING\.md"$/m, `${compose} exec -T host1 cat "$WS/GREETING.md"`);
      const out = sh(`${walk}\n${tail}`, dir);
      for (const port of [9464, 9465, 9466])
        expect(sh(`curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:${port}/readyz`, dir)).toBe("200");
      expect(out).toMatch(/^plan approved: \S+ \(permission mode accept-edits\)/m);
      expect(out).toMatch(/^turn ended: \S+ completed$/m);
    } finally {
      spawnSync("bash", ["-c", `${compose} down -v`], { cwd: dir, stdio: "ignore" });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
