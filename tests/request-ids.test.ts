// Request ids across processes (issue #17 clause 3): an id passed with `pihost --request-id` is in
// the host's log lines for the request, in the worker's lines for the turn it caused, and in the
// reply's `Pi-Request-Id` header; an id that is not 1-64 of [A-Za-z0-9_-] is replaced, never echoed.
import { headers } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { encodeJson } from "../services/protocol/envelope.ts";
import { REQUEST_ID_HEADER } from "../services/protocol/rpc-client.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import { pluginWildcard, rpcSubject, workerHostSubject } from "../services/protocol/subjects.ts";
import type { ScriptStep } from "../services/protocol/values.ts";
import { pihost } from "./support/cli.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("request-ids", { host: true, worker: true });

/** The JSON log lines of a process that carry `requestId`. */
function linesWith(lines: string[], requestId: string): Array<Record<string, unknown>> {
  return lines
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return null;
      }
    })
    .filter((l): l is Record<string, unknown> => l !== null && l.requestId === requestId);
}

async function scriptedSession(
  principal: string,
  script: ScriptStep[] = [{ text: "Done." }],
): Promise<SessionView> {
  const rpc = stack.client(principal);
  const ws = stack.newWorkspace(`ws-${principal}-${Math.random().toString(36).slice(2, 8)}`);
  const project = await rpc.call("projects.create", { name: "rid", workspaceRoot: ws });
  return rpc.call("session.create", {
    projectId: project.id,
    mode: "agent",
    permissionMode: "auto",
    model: { provider: "scripted", model: "script", script },
  });
}

/** One raw request with an optional `Pi-Request-Id`: the reply's header and body. */
async function rawRequest(principal: string, method: string, body: unknown, requestId?: string) {
  const h = headers();
  if (requestId !== undefined) h.set(REQUEST_ID_HEADER, requestId);
  const m = await stack.nc.request(rpcSubject(stack.env.prefix, principal, method), encodeJson(body), {
    timeout: 10_000,
    headers: h,
  });
  return {
    header: m.headers?.get(REQUEST_ID_HEADER) ?? "",
    body: JSON.parse(new TextDecoder().decode(m.data)),
  };
}

describe("request ids", () => {
  it("a CLI prompt's id is in the host's and the worker's log lines for it", async () => {
    const s = await scriptedSession("alice");
    const id = `trace-${Math.random().toString(36).slice(2, 10)}`;
    const r = await pihost(stack, ["--request-id", id, "prompt", s.id, "hello"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // The worker's lines of the turn: claimed, started and ended under the prompt's id.
    const until = Date.now() + 10_000;
    while (!linesWith(stack.worker!.lines, id).some((l) => l.event === "turn.ended") && Date.now() < until)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const workerEvents = linesWith(stack.worker!.lines, id).map((l) => l.event);
    expect(workerEvents).toEqual(expect.arrayContaining(["turn.claimed", "turn.started", "turn.ended"]));
    // The host's lines: the prompt itself, and the worker's claim and turn calls sent under its id.
    const hostLines = linesWith(stack.host!.lines, id);
    const served = hostLines.filter((l) => l.event === "host.request_served").map((l) => String(l.subject));
    expect(served).toContain(`${stack.env.prefix}.rpc.alice.session.prompt`);
    expect(served).toContain(workerHostSubject(stack.env.prefix, stack.agentClient.host, "claim"));
    expect(served).toContain(workerHostSubject(stack.env.prefix, stack.agentClient.host, "turn.end"));
    // Only this turn's worker lines carry it.
    const claimed = linesWith(stack.worker!.lines, id).find((l) => l.event === "turn.claimed")!;
    expect(claimed.sessionId).toBe(s.id);
    for (const l of linesWith(stack.worker!.lines, id)) if (l.turnId) expect(l.turnId).toBe(claimed.turnId);
  });

  it("a plugin call caused by the prompt's turn carries the prompt's id", async () => {
    // This test is the plugin: it answers on its subjects and keeps each call's Pi-Request-Id.
    const seen: string[] = [];
    const sub = stack.nc.subscribe(pluginWildcard(stack.env.prefix, "ridplug"), {
      callback: (_err, msg) => {
        seen.push(msg.headers?.get(REQUEST_ID_HEADER) ?? "");
        msg.respond(encodeJson({ result: { content: [{ type: "text", text: "peeked" }] } }));
      },
    });
    try {
      await stack.nc.flush();
      await stack.client("alice").call("plugins.register", {
        manifest: {
          id: "ridplug",
          tools: [{ name: "ridpeek", description: "harmless", parameters: { type: "object" }, risk: "low" }],
        },
      });
      const s = await scriptedSession("alice", [
        { toolCalls: [{ name: "ridpeek", args: {} }] },
        { text: "Peeked." },
      ]);
      const r = await pihost(stack, ["--request-id", "plugin-trace-1", "prompt", s.id, "peek"]);
      expect(r.code).toBe(0);
      expect(seen).toEqual(["plugin-trace-1"]);
    } finally {
      sub.unsubscribe();
    }
  });

  it("the reply carries the caller's id, and a malformed id is replaced, not echoed", async () => {
    const ok = await rawRequest("bob", "session.list", {}, "bob_req-1");
    expect(ok.header).toBe("bob_req-1");
    expect(ok.body).toHaveProperty("result");

    for (const bad of ["has space", "x".repeat(65), "dot.ted", ""]) {
      const r = await rawRequest("bob", "session.list", {}, bad);
      expect(r.header).toMatch(/^rid_[A-Za-z0-9_-]{22}$/);
      expect(r.header).not.toBe(bad);
    }
    // None given: the host makes one; an error reply carries it too, its body unchanged.
    const none = await rawRequest("bob", "session.get", { sessionId: "s_nope" });
    expect(none.header).toMatch(/^rid_/);
    expect(none.body.error.code).toBeTypeOf("string");
    expect(none.body.error.details?.requestId).toBeUndefined();
  });

  it("the CLI prints the id with an error and refuses a malformed one before sending", async () => {
    const r = await pihost(stack, ["--request-id", "cli-err-1", "session", "show", "s_nope"], "bob");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error [A-Z_]+: .* \(request cli-err-1\)\n$/);

    const bad = await pihost(stack, ["--request-id", "no good", "session", "list"], "bob");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error USAGE: --request-id must be/);
  });
});

describe("a forwarded request", () => {
  const hosts: { a: ManagedProcess | null; b: ManagedProcess | null } = { a: null, b: null };
  let sessionId = "";
  const spawnHost = (env: typeof fwd.env, id: string) =>
    spawnTs("services/host/main.ts", hostEnv({ ...env, extra: { ...env.extra, PI_HOST_ID: id } }));
  const fwd = useStack("request-ids-fwd", {
    timeoutMs: 120_000,
    setup: async (s) => {
      const stop = async () => {
        for (const p of [hosts.a, hosts.b]) await p?.kill();
      };
      try {
        // A alone first, so it owns the session; then B, which forwards requests for it to A.
        hosts.a = spawnHost(s.env, "host-a");
        await hosts.a.waitForEvent("host.ready", 60_000);
        const ws = s.newWorkspace("fwd");
        const project = await s.client("alice").call("projects.create", { name: "fwd", workspaceRoot: ws });
        sessionId = (await s.client("alice").call("session.create", { projectId: project.id })).id;
        hosts.b = spawnHost(s.env, "host-b");
        await hosts.b.waitForEvent("host.ready", 60_000);
      } catch (err) {
        await stop();
        throw err;
      }
      return stop;
    },
  });

  it("keeps its id: the forwarder's and the owner's lines and the reply carry it", async () => {
    const h = headers();
    let forwarded: string | null = null;
    for (let i = 0; i < 40 && forwarded === null; i++) {
      const id = `fwd-${i}`;
      h.set(REQUEST_ID_HEADER, id);
      const m = await fwd.nc.request(
        rpcSubject(fwd.env.prefix, "alice", "session.get"),
        encodeJson({ sessionId }),
        { timeout: 10_000, headers: h },
      );
      expect(m.headers?.get(REQUEST_ID_HEADER)).toBe(id);
      if (linesWith(hosts.b!.lines, id).some((l) => l.event === "host.request_forwarded")) forwarded = id;
    }
    expect(forwarded).not.toBeNull();
    const served = linesWith(hosts.a!.lines, forwarded!).filter((l) => l.event === "host.request_served");
    expect(served.map((l) => l.subject)).toEqual([`${fwd.env.prefix}.rpc.alice.session.get`]);
  });
});
