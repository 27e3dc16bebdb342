// The run of an allowed tool call (tool-pipeline.ts decides and records it): the plan tools through the
// session's actor, plugin tools on the bus, the built-in tools here, their output streamed live.
import { toolResult } from "../../../protocol/result.ts";
import type { ToolExecuteResult, ToolsExecuteParams } from "../../../protocol/schemas.ts";
import type { HostMetrics } from "../../metrics.ts";
import type { PluginCaller } from "../../tools/plugin-caller.ts";
import type { ToolAborts } from "../../tools/tool-aborts.ts";
import type { ToolRunner } from "../../tools/tool-runner.ts";
import type { SessionSupervisor } from "../actors/session-supervisor.ts";
import type { Audience, EventPublisher } from "../events/event-publisher.ts";
import type { Lease } from "../turns/turn-dispatcher.ts";

/** What a run needs (a part of the pipeline's deps, tool-pipeline.ts ToolPipelineDeps). */
export interface ToolRunDeps {
  supervisor: SessionSupervisor;
  events: EventPublisher;
  /** The built-in tools, built once from config; the call's workspace and settings come per call. */
  runner: Pick<ToolRunner, "run">;
  /** Abort signals of running tool calls by turn (a dead turn aborts its Bash commands). */
  aborts?: ToolAborts;
  /** Calls allowed plugin tools on `<prefix>.plugin.<pluginId>.<tool>` (none: PLUGIN_UNAVAILABLE). */
  plugins?: PluginCaller;
  metrics?: Pick<HostMetrics, "sandboxStart" | "sandboxFailure">;
}

/** Runs an allowed call: the plan tools through the session's actor, plugins on the bus, the rest here. */
export async function runTool(
  deps: ToolRunDeps,
  lease: Lease,
  p: ToolsExecuteParams,
  facts: { workspaceRoot: string; networkAllowed: boolean; previewOrigins: string[] },
  to: Audience,
  plugin: { pluginId: string } | null,
): Promise<ToolExecuteResult> {
  const { supervisor, events } = deps;
  if (p.tool === "EnterPlanMode") {
    return supervisor.request<ToolExecuteResult>(lease.sessionId, (reply) => ({
      type: "ENTER_PLAN",
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      reply,
    }));
  }
  if (p.tool === "ExitPlanMode") {
    return supervisor.request<ToolExecuteResult>(lease.sessionId, (reply) => ({
      type: "SUBMIT_PLAN",
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      args: p.args,
      reply,
    }));
  }
  if (plugin) {
    return deps.plugins
      ? deps.plugins.call(plugin.pluginId, p.tool, {
          sessionId: lease.sessionId,
          turnId: p.turnId,
          toolCallId: p.toolCallId,
          args: p.args,
        })
      : toolResult("PLUGIN_UNAVAILABLE", "this host has no plugin connection");
  }
  let chunk = 0;
  const abort = deps.aborts?.open(p.turnId);
  // Bash and BrowserPreview run in a sandbox of their own: counted, with the ones that did not start.
  const sandboxed = p.tool === "Bash" || p.tool === "BrowserPreview";
  if (sandboxed) deps.metrics?.sandboxStart();
  const ran = deps.runner
    .run(p.tool, p.args, {
      workspaceRoot: facts.workspaceRoot,
      network: facts.networkAllowed,
      previewOrigins: facts.previewOrigins,
      sessionId: lease.sessionId,
      ...(abort ? { signal: abort.signal } : {}),
      // Streamed output goes to this session's audience only, in order.
      onOutput: (stream, text) =>
        events.publish(to, "tool.output", {
          turnId: p.turnId,
          toolCallId: p.toolCallId,
          tool: p.tool,
          stream,
          chunk: chunk++,
          text,
        }),
    })
    .finally(() => abort?.release());
  if (!sandboxed) return ran;
  return ran.then(
    (r) => {
      if (r.code === "SANDBOX_UNAVAILABLE") deps.metrics?.sandboxFailure();
      return r;
    },
    (err) => {
      deps.metrics?.sandboxFailure();
      throw err;
    },
  );
}
