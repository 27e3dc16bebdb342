// README.md's "Use your own model", run as written: its models.json (pointed at a local
// OpenAI-compatible server this test starts, in place of Ollama's address) is given to a real
// worker, and its commands create a session on `local/qwen2.5-coder:7b` and get the server's answer.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type FakeProvider, startFakeOpenAI } from "./support/fake-providers.ts";
import { REPO_ROOT, startHost, startWorker } from "./support/processes.ts";
import { fencedBlock, readme } from "./support/readme.ts";
import { useStack } from "./support/stack-fixture.ts";

const HEADING = "## Use your own model";
const OLLAMA = "http://127.0.0.1:11434/v1";
let openai: FakeProvider;
let tmp: string;
afterAll(async () => {
  await openai?.close();
});

describe("README: use your own model", () => {
  const stack = useStack("ownmodel", {
    timeoutMs: 90_000,
    async prepare(s) {
      openai = await startFakeOpenAI();
      const json = fencedBlock(readme(), HEADING, "json");
      if (!json?.includes(OLLAMA)) throw new Error(`README.md has no models.json block naming ${OLLAMA}`);
      const file = path.join(s.dir, "models.json");
      writeFileSync(file, json.replace(OLLAMA, openai.baseUrl));
      tmp = path.join(s.dir, "tmp");
      mkdirSync(tmp);
      s.env.workspaceRoots = [tmp];
      s.env.extra = { ...s.env.extra, PI_MODELS_JSON: file };
    },
    async setup(s) {
      const host = startHost(s.env);
      const worker = startWorker(s.env);
      await Promise.all([
        host.waitForEvent("host.ready", 60_000),
        worker.waitForEvent("worker.ready", 60_000),
      ]);
      return async () => {
        await Promise.all([host.stop(), worker.stop()]);
      };
    },
  });

  it("runs as written", { timeout: 120_000 }, async () => {
    const script = fencedBlock(readme(), HEADING, "sh");
    expect(script).not.toBeNull();
    openai.reply({ kind: "text", chunks: ["Hello", "!"] });
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn("bash", ["-euo", "pipefail", "-c", script!], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          HOME: process.env.HOME ?? tmp,
          TMPDIR: tmp,
          NATS_URL: stack.env.natsUrl,
          PI_PREFIX: stack.env.prefix,
          PI_PRINCIPAL: "alice",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      child.stderr.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      child.on("close", (code) => resolve({ code, out }));
    });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/^local\/qwen2\.5-coder:7b {2}1 worker$/m);
    expect(r.out).toMatch(/^assistant: Hello!$/m);
    expect(r.out).toMatch(/^turn ended: \S+ completed$/m);
    // The server was asked for the model the session named, by the worker (the client sent no URL).
    expect(openai.requests.at(-1)?.body.model).toBe("qwen2.5-coder:7b");
  });
});
