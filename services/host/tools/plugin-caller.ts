// Calls an allowed plugin tool on the plugin's own subject (docs/protocol.md "Plugins"); the host
// sends a call only after its policy allowed it. Any fault of the plugin is a refusal value.
import { headers, type NatsConnection } from "@nats-io/nats-core";
import { decodeJson, encodeJson } from "../../protocol/envelope.ts";
import { currentRequestId } from "../../runtime/log.ts";
import type { PluginCallRequest } from "../../protocol/plugin-schemas.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import { toolResult } from "../../protocol/result.ts";
import { REQUEST_ID_HEADER } from "../../protocol/rpc-client.ts";
import { pluginSubject } from "../../protocol/subjects.ts";

export interface PluginCaller {
  /** Calls an allowed plugin tool; no responder or no reply in time is the refusal PLUGIN_UNAVAILABLE. */
  call(pluginId: string, tool: string, body: PluginCallRequest): Promise<ToolExecuteResult>;
}

const refusal = (code: "PLUGIN_UNAVAILABLE" | "TOOL_FAILED", message: string) => toolResult(code, message);

export function createPluginCaller(deps: {
  nc: NatsConnection;
  prefix: string;
  timeoutMs?: number;
}): PluginCaller {
  const timeout = deps.timeoutMs ?? 30_000;
  return {
    async call(pluginId, tool, body) {
      // The plugin sees the request id of the tool call (the turn's) in its `Pi-Request-Id` header.
      const requestId = currentRequestId();
      const h = headers();
      if (requestId !== undefined) h.set(REQUEST_ID_HEADER, requestId);
      let data: Uint8Array;
      try {
        data = (
          await deps.nc.request(pluginSubject(deps.prefix, pluginId, tool), encodeJson(body), {
            timeout,
            ...(requestId !== undefined ? { headers: h } : {}),
          })
        ).data;
      } catch (err) {
        return refusal(
          "PLUGIN_UNAVAILABLE",
          `plugin ${pluginId} did not answer ${tool}: ${(err as Error).message}`,
        );
      }
      let reply: unknown;
      try {
        reply = decodeJson(data);
      } catch {
        return refusal("TOOL_FAILED", `plugin ${pluginId} replied with something that is not JSON`);
      }
      const r = (typeof reply === "object" && reply !== null ? reply : {}) as Record<string, unknown>;
      if ("error" in r) {
        const e = (typeof r.error === "object" && r.error !== null ? r.error : {}) as Record<string, unknown>;
        const msg = typeof e.message === "string" ? e.message : "the plugin refused the call";
        return refusal("TOOL_FAILED", `${tool}: ${msg}`);
      }
      const res = (typeof r.result === "object" && r.result !== null ? r.result : null) as Record<
        string,
        unknown
      > | null;
      const content = res && Array.isArray(res.content) ? res.content : null;
      if (!content) return refusal("TOOL_FAILED", `plugin ${pluginId} replied without result.content`);
      const texts = content
        .filter(
          (c): c is { type: "text"; text: string } =>
            typeof c === "object" && c !== null && c.type === "text" && typeof c.text === "string",
        )
        .map((c) => ({ type: "text" as const, text: c.text }));
      if (res?.isError === true) return { content: texts, isError: true, code: "TOOL_FAILED" };
      return { content: texts, isError: false };
    },
  };
}
