// Entry point of the agent worker process: reads the environment, connects to NATS, serves turns
// until SIGTERM/SIGINT, then stops taking offers, aborts and drains its turns and exits 0.
import { connect } from "@nats-io/transport-node";
import { errorFields, createLogger } from "../runtime/log.ts";
import { type AgentWorkerConfig, readAgentConfig } from "./agent-config.ts";
import { createAgentWorker } from "./agent-worker.ts";
import { inboxPrefix } from "../protocol/subjects.ts";

// Until the configuration is read the log knows only the credential shapes; then its secrets too.
let log = createLogger("agent");

async function main(): Promise<void> {
  let config: AgentWorkerConfig;
  try {
    config = readAgentConfig();
  } catch (err) {
    log.error("worker.config_invalid", errorFields(err));
    process.exit(1);
  }
  log.info("worker.models", { file: config.models.source ?? null, providers: config.models.fileProviders });
  // A warning names the unset variable the file gives as apiKey: that text is then the key, but it
  // is a name the operator wrote, and the warning is useless without it. Every later line of this
  // worker loses its keys, header values and NATS password (docs/models.md).
  for (const warning of config.models.warnings) log.warn("worker.models_warning", { warning });
  log = createLogger("agent", undefined, { secrets: [...config.models.secrets(), config.natsPassword] });
  if (config.devMode) {
    log.warn("worker.dev_mode", {
      banner:
        "DEVELOPMENT MODE: the agent worker connects to NATS without the production authentication setup",
      natsUrl: config.natsUrl,
    });
  }

  const nc = await connect({
    servers: config.natsUrl,
    name: `pi-agent-${config.workerId}`,
    maxReconnectAttempts: -1,
    // Replies to this worker's requests arrive only under its own prefix (docs/security.md).
    inboxPrefix: inboxPrefix(config.workerId),
    ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword } : {}),
  });
  const worker = createAgentWorker({
    nc,
    prefix: config.prefix,
    workerId: config.workerId,
    concurrency: config.concurrency,
    log,
    scriptedCallLog: config.scriptedCallLog,
    models: config.models,
  });

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info("worker.stopping", { signal, running: worker.load() });
    try {
      await worker.stop();
      await nc.drain();
    } catch (err) {
      log.warn("worker.stop_failed", errorFields(err));
    }
    log.info("worker.stopped", { workerId: config.workerId });
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  void nc.closed().then((err) => {
    if (shuttingDown) return;
    log.error("worker.nats_closed", err ? errorFields(err) : {});
    process.exit(1);
  });

  await worker.start();
}

main().catch((err) => {
  log.error("worker.crashed", errorFields(err));
  process.exit(1);
});
