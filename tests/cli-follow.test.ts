// Following and watching with the real CLI (in this process, on real NATS) against a real host and
// agent worker: a permission prompt while following is printed with the exact command that answers
// it, Bash output streams, a second person sees nothing of it, a turn no worker claims is said
// plainly, a host restart ends the follow within seconds with the fenced end (exit 4), and a watch
// that loses its NATS connection catches up without gaps or repeats.
import { spawnSync } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionView } from "../services/protocol/schemas.ts";
import type { ScriptStep } from "../services/protocol/values.ts";
import { jsonError, pihost, startPihost } from "./support/cli.ts";
import { REPO_ROOT } from "./support/processes.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { Mode, PermissionMode } from "../services/protocol/modes.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("cli-follow", { host: true, worker: true });

async function session(
  script: ScriptStep[],
  opts: { permissionMode?: PermissionMode; mode?: Mode } = {},
): Promise<SessionView> {
  const alice = stack.client("alice");
  const ws = stack.newWorkspace(`ws-${Math.random().toString(36).slice(2, 8)}`);
  const project = await alice.call("projects.create", { name: "follow", workspaceRoot: ws });
  return alice.call("session.create", {
    projectId: project.id,
    mode: opts.mode ?? "agent",
    permissionMode: opts.permissionMode ?? "ask",
    model: { provider: "scripted", model: "script", script },
  });
}

const BASH_THEN_TEXT: ScriptStep[] = [
  { toolCalls: [{ name: "Bash", args: { command: "echo out-line; echo err-line >&2" } }] },
  { text: "All done." },
];

describe("pihost prompt and watch while a person is needed", () => {
  it("prints the permission prompt with the command that answers it, then streams Bash output to the end", async () => {
    const s = await session(BASH_THEN_TEXT);
    const watchAll = startPihost(stack, ["watch", "--for", "60"]);
    const watchBob = startPihost(stack, ["watch", "--for", "60"], "bob");
    await watchAll.printed(/^watching all your sessions/m);
    await watchBob.printed(/^watching all your sessions/m);

    const follower = startPihost(stack, ["prompt", s.id, "run it"]);
    const m = await follower.printed(
      /^ {2}answer: pihost permissions allow (req_\S+) {3}\(or allow-session, deny\)$/m,
    );
    const requestId = m[1]!;
    expect(follower.output().stdout).toMatch(
      /^permission needed: Bash \(\w+\) \{.*echo out-line.*\} until \d{4}-\d\d-\d\dT/m,
    );
    // The watch of every session says the same, labelled with the session.
    await watchAll.printed(new RegExp(`^\\[${s.id}\\] permission needed: Bash`, "m"));

    // A second person cannot answer it; the owner can, and answering again returns the record.
    const bob = await pihost(stack, ["--json", "permissions", "allow", requestId], "bob");
    expect(bob.code).toBe(1);
    expect(jsonError(bob).code).toBe("FORBIDDEN");
    const allow = await pihost(stack, ["permissions", "allow", requestId]);
    expect(allow).toMatchObject({ code: 0, stdout: `${requestId}: allow-once\n` });
    const again = await pihost(stack, ["permissions", "allow", requestId]);
    expect(again).toMatchObject({ code: 0, stdout: `${requestId}: allow-once\n` });
    const other = await pihost(stack, ["permissions", "deny", requestId]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^error PERMISSION_ALREADY_RESOLVED: /);

    const r = await follower.done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ {2}\| out-line$/m);
    expect(r.stdout).toMatch(/^ {2}! err-line$/m);
    expect(r.stdout).toMatch(/^assistant: All done\.$/m);
    expect(r.stdout).toMatch(/^turn ended: turn_\S+ completed$/m);
    // Output order: the prompt, its answer, the output, the result, the end.
    const at = (re: RegExp) => r.stdout.search(re);
    expect(at(/permission needed/)).toBeLessThan(at(/permission allow-once: Bash/));
    expect(at(/permission allow-once/)).toBeLessThan(at(/\| out-line/));
    expect(at(/\| out-line/)).toBeLessThan(at(/tool result: Bash allow/));
    expect(at(/tool result: Bash/)).toBeLessThan(at(/turn ended/));

    await watchAll.printed(new RegExp(`^\\[${s.id}\\] turn ended: \\S+ completed$`, "m"));
    // bob owns nothing and approves nothing here: his watch shows none of it.
    expect(watchBob.output().stdout).not.toContain(s.id);
  });

  it("--json: the reply and every event one JSON object per line; events in sequence order", async () => {
    const s = await session([{ text: "Just text." }], { permissionMode: "auto" });
    const r = await pihost(stack, ["--json", "prompt", s.id, "hi"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0]).toHaveProperty("turnId");
    const seqs = lines.slice(1).map((e) => e.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(lines.at(-1)).toMatchObject({ type: "turn.ended", status: "completed" });
    expect(lines.some((e) => e.type === "message" && e.text === "Just text.")).toBe(true);
  });

  it("watch of one session: another person's session is refused (exit 1), a missing one too", async () => {
    const s = await session([{ text: "x" }]);
    const bob = await pihost(stack, ["watch", s.id, "--for", "1"], "bob");
    expect(bob.code).toBe(1);
    expect(bob.stderr).toMatch(/^error FORBIDDEN: /);
    const none = await pihost(stack, ["watch", "ses_doesnotexist0000", "--for", "1"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error SESSION_NOT_FOUND: /);
  });

  it("a watch started while a prompt waits says so first", async () => {
    const s = await session(BASH_THEN_TEXT);
    const { turnId } = await stack.client("alice").call("session.prompt", {
      sessionId: s.id,
      text: "go",
    });
    const events = stack.events(s.id);
    await events.waitFor((e) => e.type === "permission.requested");
    const w = await pihost(stack, ["watch", s.id, "--for", "0.5"]);
    expect(w.code).toBe(0);
    expect(w.stdout).toMatch(/^permission needed: Bash \(\w+\) in session \S+ until /m);
    expect(w.stdout).toMatch(/^ {2}answer: pihost permissions allow req_\S+/m);
    await stack.client("alice").call("session.abort", { sessionId: s.id });
    await events.waitFor(isEvent("turn.ended", (e) => e.turnId === turnId));
  });
});

describe("pihost in a pipeline", () => {
  it("`pihost prompt ... | head -1` prints one line and ends quietly: exit 0, no EPIPE, the turn goes on", async () => {
    const s = await session([{ text: "a line" }, { text: "more" }], { permissionMode: "auto" });
    const main = path.join(REPO_ROOT, "services/cli/main.ts");
    const r = spawnSync(
      "bash",
      [
        "-c",
        `${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(main)} prompt "$1" hi | head -1; echo "pihost=\${PIPESTATUS[0]}"`,
        "_",
        s.id,
      ],
      {
        cwd: REPO_ROOT,
        encoding: "utf8",
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NATS_URL: stack.env.natsUrl,
          PI_PREFIX: stack.env.prefix,
          PI_PRINCIPAL: "alice",
        },
        timeout: 60_000,
      },
    );
    expect(r.stdout).toMatch(/^turn started: turn_\S+ \(prompt\)\npihost=0\n$/);
    expect(r.stderr).not.toMatch(/EPIPE|Error|at /);
  });
});

describe("no worker, a host restart, a lost connection", () => {
  it("with no worker running, says plainly that nobody claimed the turn, then times out (exit 3)", async () => {
    const s = await session([{ text: "never" }], { permissionMode: "auto" });
    const s2 = await session([{ text: "never" }], { permissionMode: "auto" });
    await stack.worker!.stop();
    try {
      const r = await pihost(stack, ["prompt", s.id, "hello", "--timeout", "3"], "alice", {
        claimNoticeMs: 500,
      });
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/^waiting: no worker has claimed turn_\S+ yet; is an agent worker running/m);
      expect(r.stderr).toMatch(/^error TIMEOUT: turn turn_\S+ did not finish within 3 s/);
      const j = await pihost(stack, ["--json", "prompt", s2.id, "again", "--timeout", "1"], "alice", {
        claimNoticeMs: 200,
      });
      expect(j.code).toBe(3);
      const errs = j.stderr
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(errs[0]).toMatchObject({ notice: "NO_WORKER_CLAIMED" });
      expect(errs.at(-1)).toMatchObject({ error: { code: "TIMEOUT", retriable: true } });
    } finally {
      await stack.startWorker();
    }
    // The worker's return may still be settling the sessions: an abort may be asked to retry.
    for (const id of [s.id, s2.id])
      await eventually(() => stack.client("alice").call("session.abort", { sessionId: id }), 15_000);
  });

  it("a follower across a host restart prints the fenced end within seconds and exits 4", async () => {
    const never = `${stack.dir}/never-created`;
    const s = await session([{ waitForFile: never, text: "unreached" }], { permissionMode: "auto" });
    const follower = startPihost(stack, ["prompt", s.id, "wait forever"]);
    const watch = startPihost(stack, ["watch", s.id, "--for", "60"]);
    await watch.printed(/^watching session/m);
    await follower.printed(/^turn claimed: turn_\S+ by worker /m);
    await stack.host!.kill();
    const killedAt = Date.now();
    await stack.startHost();
    const r = await follower.done;
    expect(r.code, r.stdout + r.stderr).toBe(4);
    expect(r.stdout).toMatch(
      /^turn ended: turn_\S+ aborted \(\w+\): the host restarted; nothing is replayed$/m,
    );
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    await watch.printed(/^turn ended: turn_\S+ aborted/m);
  });

  it("a watch that loses NATS catches up when it is back: every event once, in order", async () => {
    const proxy = await tcpProxy(new URL(stack.env.natsUrl.replace(/^nats:/, "http:")));
    try {
      const s = await session([{ text: "one" }, { text: "two" }], { permissionMode: "auto" });
      const watch = startPihost(stack, ["--json", "watch", s.id, "--for", "60"], "alice", {
        env: { NATS_URL: proxy.url, PI_PREFIX: stack.env.prefix, PI_PRINCIPAL: "alice" },
      });
      const alice = stack.client("alice");
      const events = stack.events(s.id);
      await new Promise((r) => setTimeout(r, 300)); // subscribed (the watch printed nothing in --json)
      await alice.call("session.prompt", { sessionId: s.id, text: "first" });
      await watch.printed(/"type":"turn\.ended"/);
      proxy.cut();
      // While the watch is disconnected a whole turn happens.
      await alice.call("session.prompt", { sessionId: s.id, text: "second" });
      await events.waitFor(
        (e) => e.type === "turn.ended" && events.all.filter((x) => x.type === "turn.ended").length === 2,
      );
      proxy.restore();
      await watch.printed(/"text":"two"[\s\S]*"type":"turn\.ended"/, 40_000);
      const seen = watch
        .output()
        .stdout.trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l) as { seq?: number });
      // Stored events, each once and in order; a state the actor only passed through is live only
      // (no seq), so what happened while the watch was away has none of those.
      const seqs = seen.flatMap((e) => (e.seq === undefined ? [] : [e.seq]));
      const expected = events.all.flatMap((e) => (e.seq === undefined || e.seq < seqs[0]! ? [] : [e.seq]));
      expect(seqs).toEqual(expected);
    } finally {
      proxy.close();
    }
  });
});

/** A TCP proxy to NATS that can drop every connection and refuse new ones, then accept again. */
async function tcpProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on("error", () => {});
          sock.on("close", () => sockets.delete(sock));
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, "127.0.0.1", () => resolve());
    });
  await listen();
  const cut = () => {
    server?.close();
    server = null;
    for (const sock of sockets) sock.destroy();
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    cut,
    restore: () => void listen(),
    close: cut,
  };
}
