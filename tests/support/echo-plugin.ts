// A tiny plugin process for tests (docs/architecture.md "Processes"): serves `<prefix>.plugin.echo.*` on NATS. Every tool of
// the plugin echoes `args.text`; every call it receives is appended as one JSON line to
// ECHO_PLUGIN_CALL_LOG first, so a test can prove a denied call never reached the plugin.
import { appendFileSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { decodeJson, encodeJson } from "../../services/protocol/envelope.ts";
import { pluginWildcard } from "../../services/protocol/subjects.ts";

const prefix = process.env.PI_PREFIX || "pi";
const callLog = process.env.ECHO_PLUGIN_CALL_LOG;
const nc = await connect({ servers: process.env.NATS_URL || "nats://127.0.0.1:4222", name: "echo-plugin" });
const sub = nc.subscribe(pluginWildcard(prefix, "echo"));
await nc.flush();
console.log(JSON.stringify({ event: "plugin.ready", subject: pluginWildcard(prefix, "echo") }));

process.on("SIGTERM", () => {
  void nc.drain().finally(() => process.exit(0));
});

for await (const msg of sub) {
  const tool = msg.subject.split(".").pop() ?? "";
  let body: Record<string, unknown> = {};
  try {
    body = decodeJson(msg.data) as Record<string, unknown>;
  } catch {}
  if (callLog) appendFileSync(callLog, `${JSON.stringify({ tool, ...body })}\n`);
  const args = (body.args ?? {}) as Record<string, unknown>;
  const text = typeof args.text === "string" ? args.text : JSON.stringify(args);
  msg.respond(encodeJson({ result: { content: [{ type: "text", text: `${tool}: ${text}` }] } }));
}
