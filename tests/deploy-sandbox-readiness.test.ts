// A host that cannot start a tool sandbox says so at start, in /readyz (503 naming `sandbox`) and in
// host.status (the exact reason), instead of failing each tool (docs/operations.md "What the sandbox
// needs from the runtime"). As the attack a container runtime makes by default: Docker's seccomp
// profile refuses a new user namespace (CLONE_NEWUSER) to a process without CAP_SYS_ADMIN with EPERM;
// the host's own no-user-namespace filter (sandbox-seccomp.ts), put on the host process by an outer
// bwrap, makes the kernel refuse the same way, so bwrap's own words reach the operator.
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../services/host/tools/sandbox-probe.ts";
import { noUserNamespaceFilter } from "../services/host/tools/sandbox-seccomp.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { openStackDir, SANDBOX_USER, sandboxTurn } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { freePort } from "./support/test-nats.ts";
import { executeTool } from "./support/worker-double.ts";

/** bwrap's message when the kernel refuses it a user namespace (Debian's bubblewrap 0.8). */
const NO_USERNS = /No permissions to create new namespace/;

/** The seccomp filter on disk and a command prefix that runs a program under it (as root, no userns). */
function seccompRefusingUserNamespaces(dir: string): { filter: string; wrap: string[] } {
  const filter = path.join(dir, "no-userns.bpf");
  writeFileSync(filter, noUserNamespaceFilter()!);
  const script = 'exec bwrap --bind / / --dev-bind /dev /dev --die-with-parent --seccomp 9 -- "$@" 9<"$0"';
  return { filter, wrap: ["/bin/sh", "-c", script, filter] };
}

const listen = `127.0.0.1:${await freePort()}`;
let host: ManagedProcess;
const stack = useStack("sbxready", {
  prepare: openStackDir,
  async setup(s) {
    const { wrap } = seccompRefusingUserNamespaces(s.dir);
    host = spawnTs("services/host/main.ts", { ...hostEnv(s.env), PI_HTTP_LISTEN: listen }, [], { wrap });
    await host.waitForEvent("host.ready", 60_000);
    return () => host.stop();
  },
});

describe("probeSandbox", () => {
  it("starts one sandbox like a tool's on this machine", async () => {
    expect(await probeSandbox({ user: SANDBOX_USER })).toEqual({ available: true });
  });

  it("names what is missing: the sandbox user, bwrap, setpriv", async () => {
    expect(await probeSandbox({ user: "pihost-no-such-user" })).toEqual({
      available: false,
      unavailableReason: "sandbox user pihost-no-such-user does not exist",
    });
    expect(await probeSandbox({ user: SANDBOX_USER }, { bwrap: null, setpriv: "/usr/bin/setpriv" })).toEqual({
      available: false,
      unavailableReason: "bwrap (Debian package bubblewrap) is not installed",
    });
    const noSetpriv = await probeSandbox({ user: SANDBOX_USER }, { bwrap: "/usr/bin/bwrap", setpriv: null });
    expect(noSetpriv.unavailableReason).toMatch(/setpriv/);
  });

  it("under a seccomp filter that refuses user namespaces: not available, in bwrap's own words", async () => {
    const { filter } = seccompRefusingUserNamespaces(stack.dir);
    const setpriv = path.join(stack.dir, "setpriv-under-seccomp");
    writeFileSync(
      setpriv,
      `#!/bin/sh\nexec bwrap --bind / / --dev-bind /dev /dev --seccomp 9 -- /usr/bin/setpriv "$@" 9<${filter}\n`,
    );
    chmodSync(setpriv, 0o755);
    const r = await probeSandbox({ user: SANDBOX_USER }, { bwrap: "/usr/bin/bwrap", setpriv });
    expect(r.available).toBe(false);
    expect(r.unavailableReason).toMatch(NO_USERNS);
    expect(r.unavailableReason).toContain(`a sandbox as ${SANDBOX_USER} did not start`);
    expect(r.unavailableReason).toContain('docs/operations.md "What the sandbox needs from the runtime"');
  });
});

describe("a host whose runtime refuses user namespaces", () => {
  it("says so at start, answers /readyz 503 naming sandbox, and host.status gives the reason", async () => {
    const logged = await host.waitForEvent("host.sandbox_unavailable");
    expect(logged).toMatchObject({ level: "error", reason: expect.stringMatching(NO_USERNS) });
    const res = await fetch(`http://${listen}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ ready: false, notReady: ["sandbox"] });
    // Development mode: every principal is a settings admin and sees `sandbox`.
    const status = await stack.client("alice").call("host.status", {});
    expect(status.readiness).toEqual({ ready: false, failing: ["sandbox"] });
    expect(status.sandbox).toMatchObject({ available: false, unavailableReason: logged.reason });
    expect((await fetch(`http://${listen}/healthz`)).status).toBe(200);
  });

  it("still refuses every tool with SANDBOX_UNAVAILABLE and runs nothing unconfined", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    const marker = path.join(ws, "ran-unconfined");
    const bash = await executeTool(stack, assignment, "b1", "Bash", { command: `touch ${marker}` });
    expect(bash).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
    const read = await executeTool(stack, assignment, "r1", "Read", { path: path.join(ws, "x") });
    expect(read).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
    expect(existsSync(marker)).toBe(false);
  });
});
