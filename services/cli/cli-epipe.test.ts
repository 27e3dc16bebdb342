// `pihost ... | head -1`: a reader that closes the pipe early ends the command quietly (exit 0), with
// no EPIPE stack trace. Runs the real entry point as a process whose stdout reader goes away at once.
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const MAIN = path.resolve(import.meta.dirname, "main.ts");

describe("the CLI and a closed pipe", () => {
  it("exits 0 without a stack trace when stdout's reader is gone", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, "--help"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|Error:/);
    expect(code).toBe(0);
  }, 30_000);
});
