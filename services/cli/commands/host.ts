// `pihost status` and `pihost models`: the host's own state and the models its workers serve.
import type { Command } from "commander";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";

export function addHostCommands(program: Command, run: Run): void {
  program
    .command("status")
    .description(
      "the host: sessions it holds (of yours, unless a settings admin), database and NATS, overlapping projects; admins: every host, its leases and readiness",
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("host.status");
      if (isJson(cmd)) return outJson(run, r);
      const yes = (b: boolean) => (b ? "reachable" : "NOT reachable");
      out(run, [
        `host ${r.hostId}, up ${Math.round(r.uptimeMs / 1000)} s`,
        `  database: ${yes(r.reachable.database)}, NATS: ${yes(r.reachable.nats)}`,
        ...(r.readiness
          ? [`  ready: ${r.readiness.ready ? "yes" : `no (${r.readiness.failing.join(", ")})`}`]
          : []),
        `  ${r.view === "own" ? "your sessions" : "sessions"}: ${r.sessions.active} active, ${r.sessions.passivated} passivated, ${r.sessions.degraded.length} degraded`,
        ...r.sessions.degraded.map(
          (d) => `    degraded: ${d.sessionId} (${d.failures} failures since ${d.since})`,
        ),
        ...r.projectOverlaps.map(
          (o) =>
            `  overlapping projects (no tool runs in them): ${o.projects.map((p) => `${p.projectId}${p.workspaceRoot ? ` ${p.workspaceRoot}` : ""}`).join(" and ")}`,
        ),
        ...(r.hosts ?? []).map(
          (h) =>
            `  host ${h.hostId}: ${h.state}, incarnation ${h.incarnation}, heartbeat ${h.heartbeat} at ${h.heartbeatAt}, version ${h.version ?? "unknown"}, ${h.leases} lease${h.leases === 1 ? "" : "s"}`,
        ),
      ]);
    });
  program
    .command("models")
    .description("the models live agent workers serve (for session create --model), and the default")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("models.list");
      if (isJson(cmd)) return outJson(run, r);
      out(run, [
        ...(r.models.length === 0
          ? ["no live worker serves a model (is an agent worker running? docs/models.md)"]
          : r.models.map(
              (m) =>
                `${m.provider}/${m.model}  ${m.workers} worker${m.workers === 1 ? "" : "s"}${m.keyConfigured ? "" : ", no key configured"}`,
            )),
        `default: ${r.default ? `${r.default.provider}/${r.default.model}` : "none (sessions must name a model)"}`,
      ]);
    });
}
