// Per-project network for the sandbox (docs/architecture.md "Tools") over NATS against the real host, the test acting
// as the worker. Off (the default): the sandbox has only `lo`, and a TCP listener on the host's own
// non-loopback address is unreachable, while the same probe succeeds outside. On (projects.configure,
// applied to the next call): slirp4netns gives the sandbox tap0 and a resolver, the host's listener
// answers, yet the host's loopback stays closed (Postgres, NATS and a loopback listener, through
// 127.0.0.1 and through slirp's host alias 10.0.2.2). A slirp4netns that fails or never gets ready
// means SANDBOX_UNAVAILABLE or a killed stand-in host, and in both cases the command never ran and
// nothing outlived it.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runBash } from "../services/host/tools/bash-runner.ts";
import type { ProjectView } from "../services/protocol/project-schemas.ts";
import type { ToolExecuteResult, TurnAssignment } from "../services/protocol/schemas.ts";
import { spawnTs } from "./support/processes.ts";
import {
  hostAddress,
  openStackDir,
  processesWith,
  sandboxIds,
  sandboxTurn,
  sandboxWorkspace,
} from "./support/sandbox.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool } from "./support/worker-double.ts";

const stack = useStack("sandboxnet", { prepare: openStackDir, host: true });
let external: Server;
let loopback: Server;
let externalAddr = "";
let loopbackPort = 0;
const TOKEN = `hello-${randomBytes(4).toString("hex")}`;

function listen(host: string): Promise<Server> {
  const server = createServer((socket) => {
    // Probes that only connect hang up without reading: a reset is expected, not a failure.
    socket.on("error", () => {});
    socket.end(`${TOKEN}\n`);
  });
  return new Promise((resolve) => server.listen(0, host, () => resolve(server)));
}

beforeAll(async () => {
  external = await listen(hostAddress());
  externalAddr = `${hostAddress()}:${(external.address() as AddressInfo).port}`;
  loopback = await listen("127.0.0.1");
  loopbackPort = (loopback.address() as AddressInfo).port;
}, 30_000);

afterAll(async () => {
  await new Promise((r) => external?.close(r));
  await new Promise((r) => loopback?.close(r));
});

/** The same probe run by the test itself, outside any sandbox (async: the listeners live in this process). */
async function outside(command: string): Promise<string> {
  return (await promisify(execFile)("bash", ["-c", command], { encoding: "utf8" })).stdout;
}

let calls = 0;
function bash(a: TurnAssignment, command: string): Promise<ToolExecuteResult> {
  return executeTool(stack, a, `net${++calls}`, "Bash", { command, timeout: 20 });
}

function configure(projectId: string, body: Record<string, unknown>): Promise<ProjectView> {
  return stack.client("alice").call("projects.configure", { projectId, ...body });
}

/** Reads one line from host:port over bash's /dev/tcp, or fails (exit 1) when it cannot connect. */
const readFrom = (hostPort: string) => {
  const [h, p] = hostPort.split(":");
  return `exec 3<>/dev/tcp/${h}/${p} && head -n 1 <&3`;
};
const interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '";

describe("sandbox network per project", () => {
  it("is off by default: only lo, and the host's own address is unreachable (reachable outside)", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const ifs = await bash(assignment, interfaces);
    expect(ifs).toMatchObject({ isError: false });
    expect(String(ifs.details?.stdout).trim()).toBe("lo");
    expect((await outside(readFrom(externalAddr))).trim()).toBe(TOKEN);
    const r = await bash(assignment, readFrom(externalAddr));
    expect(r).toMatchObject({ isError: true, code: "TOOL_FAILED" });
    expect(String(r.details?.stdout)).not.toContain(TOKEN);
  });

  it("on: tap0 and a resolver, the host's address answers, the host's loopback stays closed", async () => {
    const { projectId, assignment } = await sandboxTurn(stack, "agent");
    const view = await configure(projectId, { network: true });
    expect(view).toMatchObject({ network: true, version: 1 });

    const ifs = await bash(assignment, `${interfaces}; echo; cat /etc/resolv.conf`);
    expect(ifs).toMatchObject({ isError: false });
    expect(String(ifs.details?.stdout)).toMatch(/^lo tap0 \nnameserver 10\.0\.2\.3\n$/);

    const reached = await bash(assignment, readFrom(externalAddr));
    expect(reached).toMatchObject({ isError: false });
    expect(String(reached.details?.stdout).trim()).toBe(TOKEN);

    // The host's loopback services: each answers outside, none inside (directly or via 10.0.2.2).
    for (const port of [5432, 4222, loopbackPort]) {
      expect(await outside(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo OPEN`)).toBe("OPEN\n");
      for (const addr of ["127.0.0.1", "10.0.2.2"]) {
        const r = await bash(assignment, `exec 3<>/dev/tcp/${addr}/${port} && echo OPEN`);
        expect({ addr, port, code: r.code }, JSON.stringify(r.content)).toEqual({
          addr,
          port,
          code: "TOOL_FAILED",
        });
      }
    }
    // slirp4netns ended with the command: no helper left behind.
    await eventually(async () => processesWith("slirp4netns").length === 0, 5000, "slirp4netns gone");
  });

  it("no nested user namespace, with or without network: unshare and bwrap fail inside, work outside", async () => {
    // unshare(2) with -r and -U, and clone(2) with CLONE_NEWUSER (bwrap), each as the sandbox user.
    const { uid, gid } = sandboxIds();
    // Each probe and the uid it prints in the namespace it made (root, unmapped, mapped to itself).
    const made: Record<string, string> = {
      "unshare -r id -u": "0",
      "unshare -U id -u": "65534",
      "bwrap --unshare-user --dev-bind / / id -u": String(uid),
    };
    const probes = Object.keys(made);
    for (const probe of probes)
      expect({
        probe,
        out: await outside(`setpriv --reuid=${uid} --regid=${gid} --clear-groups ${probe}`),
      }).toEqual({
        probe,
        out: `${made[probe]}\n`,
      });
    const { projectId, assignment } = await sandboxTurn(stack, "agent");
    for (const network of [false, true]) {
      await configure(projectId, { network });
      expect(String((await bash(assignment, interfaces)).details?.stdout).trim()).toBe(
        network ? "lo tap0" : "lo",
      );
      for (const probe of probes) {
        const r = await bash(assignment, probe);
        expect({ network, probe, code: r.code, out: r.details?.stdout }).toEqual({
          network,
          probe,
          code: "TOOL_FAILED",
          out: "",
        });
      }
    }
  });

  it("a change applies to the next call: off again means lo only", async () => {
    const { projectId, assignment } = await sandboxTurn(stack, "agent");
    await configure(projectId, { network: true });
    expect(String((await bash(assignment, interfaces)).details?.stdout).trim()).toBe("lo tap0");
    await configure(projectId, { network: false });
    expect(String((await bash(assignment, interfaces)).details?.stdout).trim()).toBe("lo");
    expect((await bash(assignment, readFrom(externalAddr))).code).toBe("TOOL_FAILED");
  });

  it("a slirp4netns that fails is SANDBOX_UNAVAILABLE and the command never runs", async () => {
    const ws = sandboxWorkspace(stack, `ws-slirpfail-${randomBytes(3).toString("hex")}`);
    const r = await runBash(
      { command: "touch ran-without-network" },
      {
        workspace: ws,
        network: true,
        settings: {
          user: process.env.PI_SANDBOX_USER || "pihost-sandbox",
          dataDir: stack.env.dataDir,
          slirp4netns: "/bin/false",
        },
      },
    );
    expect(r).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE", details: { network: true } });
    expect(String(r.details?.reason)).toMatch(/slirp4netns exited/);
    expect(existsSync(path.join(ws, "ran-without-network"))).toBe(false);
  });

  it("a host that dies while the network is being set up never lets the command run", async () => {
    const ws = sandboxWorkspace(stack, `ws-gate-${randomBytes(3).toString("hex")}`);
    const mark = `pihostmark${randomBytes(4).toString("hex")}`;
    // A slirp4netns stand-in that never reports ready (the command waits at the gate) and, like
    // slirp4netns with --exit-fd, ends when its exit pipe closes.
    const standIn = path.join(stack.dir, `never-ready-${mark}`);
    writeFileSync(standIn, "#!/bin/bash\nread -r -u 4 _\nexit 0\n");
    chmodSync(standIn, 0o755);
    const probe = spawnTs(
      "tests/support/sandbox-gate-probe.ts",
      {
        PI_SANDBOX_USER: process.env.PI_SANDBOX_USER,
        PI_DATA_DIR: stack.env.dataDir,
        PI_SANDBOX_SLIRP4NETNS: standIn,
      },
      [ws, `touch ran-${mark}; sleep 60; echo ${mark}`],
    );
    const waiting = await probe.waitForEvent("sandbox.waiting");
    expect(waiting.pid).toEqual(expect.any(Number));
    expect(processesWith(mark).length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(path.join(ws, `ran-${mark}`))).toBe(false);
    await probe.kill();
    await eventually(async () => processesWith(mark).length === 0, 5000, "sandbox and stand-in gone");
    expect(existsSync(path.join(ws, `ran-${mark}`))).toBe(false);
  });

  it("a host that dies while a command runs with network leaves neither the sandbox nor slirp4netns", async () => {
    const ws = sandboxWorkspace(stack, `ws-hostdeath-${randomBytes(3).toString("hex")}`);
    const mark = `pihostmark${randomBytes(4).toString("hex")}`;
    const probe = spawnTs(
      "tests/support/sandbox-gate-probe.ts",
      { PI_SANDBOX_USER: process.env.PI_SANDBOX_USER, PI_DATA_DIR: stack.env.dataDir },
      [ws, `sleep 60; echo ${mark}`],
    );
    const started = await probe.waitForEvent("sandbox.started");
    const slirpOf = `--userns-path=/proc/${started.pid}/ns/user`;
    expect(processesWith(mark).length).toBeGreaterThan(0);
    expect(processesWith(slirpOf).length).toBe(1);
    await probe.kill();
    // slirp4netns ends through its exit pipe, the sandbox through bwrap's --die-with-parent.
    await eventually(
      async () => processesWith(mark).length === 0 && processesWith(slirpOf).length === 0,
      5000,
      "sandbox and slirp4netns gone",
    );
  });
});
