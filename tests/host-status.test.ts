// host.status for the right people (issue #17 clause 4), in production mode (the generated NATS
// configuration, no PI_DEV_MODE): a settings admin (PI_SETTINGS_ADMINS) sees every host with its
// version and leases and this host's readiness; alice sees only her own sessions' figures, never bob's
// session ids, through the bus and through `pihost status`.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { rpcClient } from "../services/protocol/rpc-client.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import { pihost } from "./support/cli.ts";
import { REPO_ROOT } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { startTeamStack, type TeamStack } from "./support/team-stack.ts";

const PEOPLE = ["alice", "bob", "ops"];
let team: TeamStack | null = null;
const stack = useStack("host-status", {
  timeoutMs: 120_000,
  extra: { PI_SETTINGS_ADMINS: "ops" },
  setup: async (s) => {
    team = await startTeamStack(s, { people: PEOPLE });
    return () => team?.stop();
  },
});
const VERSION: string = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")).version;

const conns = new Map<string, NatsConnection>();
async function rpc(principal: string) {
  let nc = conns.get(principal);
  if (!nc) {
    nc = await team!.as(principal);
    conns.set(principal, nc);
  }
  return rpcClient({ nc, prefix: stack.env.prefix, principal });
}

async function sessionOf(principal: string): Promise<SessionView> {
  const client = await rpc(principal);
  const ws = stack.newWorkspace(`${principal}/status-${Math.random().toString(36).slice(2, 8)}`);
  const project = await client.call("projects.create", { name: "status", workspaceRoot: ws });
  return client.call("session.create", {
    projectId: project.id,
    mode: "agent",
    permissionMode: "auto",
    model: { provider: "scripted", model: "script", script: [{ text: "ok" }] },
  });
}

/** `pihost <args>` as `principal` on the team's NATS, with that person's credentials. */
function cliAs(principal: string, args: string[]) {
  return pihost(stack, args, principal, {
    env: {
      NATS_URL: team!.nats.url,
      PI_PREFIX: stack.env.prefix,
      PI_PRINCIPAL: principal,
      NATS_USER: principal,
      NATS_PASSWORD: team!.secrets.users[principal]!,
    },
  });
}

describe("host.status", () => {
  it("alice sees only her own sessions' figures; a settings admin sees hosts, leases and readiness", async () => {
    const mine = [await sessionOf("alice"), await sessionOf("alice")];
    const bobs = await sessionOf("bob");

    const alice = await (await rpc("alice")).call("host.status", {});
    expect(alice.view).toBe("own");
    expect(alice.sessions.active + alice.sessions.passivated + alice.sessions.degraded.length).toBe(
      mine.length,
    );
    expect(alice.hosts).toBeUndefined();
    expect(alice.readiness).toBeUndefined();
    expect(alice.sandbox).toBeUndefined();
    expect(JSON.stringify(alice)).not.toContain(bobs.id);

    const bob = await (await rpc("bob")).call("host.status", {});
    expect(bob.view).toBe("own");
    expect(bob.sessions.active + bob.sessions.passivated + bob.sessions.degraded.length).toBe(1);
    for (const s of mine) expect(JSON.stringify(bob)).not.toContain(s.id);

    const ops = await (await rpc("ops")).call("host.status", {});
    expect(ops.view).toBe("admin");
    expect(ops.sessions.active + ops.sessions.passivated + ops.sessions.degraded.length).toBe(3);
    expect(ops.readiness).toEqual({ ready: true, failing: [] });
    // Whether a sandbox's oom_score_adj is a floor (tests/sandbox-oom.test.ts checks it is the truth).
    expect(typeof ops.sandbox?.oomScorePinned).toBe("boolean");
    expect(ops.sandbox?.oomScorePinned || (ops.sandbox?.reason ?? "").length > 0).toBe(true);
    const self = ops.hosts?.find((h) => h.hostId === ops.hostId);
    expect(self).toMatchObject({ state: "running", version: VERSION, leases: 3 });
    expect(self!.incarnation).toBeGreaterThanOrEqual(1);
    expect(self!.heartbeat).toBeGreaterThanOrEqual(1);
    expect(Date.parse(self!.heartbeatAt)).not.toBeNaN();
  });

  it("pihost status prints what the caller may see", async () => {
    const a = await cliAs("alice", ["status"]);
    expect(a.stderr).toBe("");
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/^ {2}your sessions: \d+ active, \d+ passivated, 0 degraded$/m);
    expect(a.stdout).not.toMatch(/^ {2}host \S+: /m);
    expect(a.stdout).not.toMatch(/^ {2}ready: /m);

    const o = await cliAs("ops", ["status"]);
    expect(o.code).toBe(0);
    expect(o.stdout).toMatch(/^ {2}ready: yes$/m);
    expect(o.stdout).toMatch(
      new RegExp(
        `^ {2}host \\S+: running, incarnation \\d+, heartbeat \\d+ at \\S+, version ${VERSION.replace(/\./g, "\\.")}, \\d+ leases?$`,
        "m",
      ),
    );

    const j = await cliAs("alice", ["--json", "status"]);
    expect(JSON.parse(j.stdout)).toMatchObject({ view: "own" });
  });
});
