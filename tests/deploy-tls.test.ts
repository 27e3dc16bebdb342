// NATS over TLS as docker-compose.yml runs it: the generated configuration of infra/team.compose.yaml
// with the certificates infra/tls-certs.sh makes, a production-mode host and worker with the compose
// settings that matter (their own users, NODE_EXTRA_CA_CERTS naming the CA). As the attack: a host
// that does not trust the CA refuses the server (a man in the middle with another certificate gets
// nothing); with it, host and worker are ready.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateNatsConfig } from "../services/cli/nats-config.ts";
import { parseTeam } from "../services/cli/nats-team.ts";
import { hostEnv, REPO_ROOT, spawnTs } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { startPrivateNats } from "./support/test-nats.ts";

const stack = useStack("natstls");
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function composeNats() {
  const tls = path.join(stack.dir, "tls");
  execFileSync("sh", [path.join(REPO_ROOT, "infra/tls-certs.sh"), tls, "nats", "localhost", "127.0.0.1"]);
  const text = readFileSync(path.join(REPO_ROOT, "infra/team.compose.yaml"), "utf8");
  const team = parseTeam(
    text.replaceAll("/etc/nats/tls/", `${tls}/`).replace(/^prefix: pi$/m, `prefix: ${stack.env.prefix}`),
  );
  // The console's websocket is compose's fixed port, and the store the test server's own folder.
  delete team.websocket;
  delete team.jetstream.storeDir;
  const { config, secrets } = generateNatsConfig(team, { bcryptCost: 4 });
  expect(config).toContain(`cert_file: "${tls}/server.pem"`);
  const configFile = path.join(stack.dir, "nats.conf");
  writeFileSync(configFile, config);
  const caFile = path.join(tls, "ca.pem");
  const nats = await startPrivateNats({ user: "alice", pass: secrets.users.alice! }, { configFile, caFile });
  cleanups.push(nats.stop);
  // The certificate names localhost, as compose's names nats: the clients check the name too.
  return { url: nats.url.replace("127.0.0.1", "localhost"), secrets, caFile };
}

function hostOf(url: string, secrets: { users: Record<string, string> }, ca: string | null) {
  const env: Record<string, string | undefined> = {
    ...hostEnv({ ...stack.env, natsUrl: url }),
    // As compose sets it: the host's id is its name in the team file.
    PI_HOST_ID: "host1",
    NATS_USER: "host1",
    NATS_PASSWORD: secrets.users.host1,
    PI_NATS_RPC_USER: "host1-rpc",
    PI_NATS_RPC_PASSWORD: secrets.users["host1-rpc"],
    ...(ca ? { NODE_EXTRA_CA_CERTS: ca } : {}),
  };
  delete env.PI_DEV_MODE;
  delete env.PI_TEST_HOOKS;
  return spawnTs("services/host/main.ts", env);
}

describe("NATS over TLS, as compose runs it", () => {
  it("a host that does not trust the CA refuses the server and exits", async () => {
    const { url, secrets } = await composeNats();
    const host = hostOf(url, secrets, null);
    cleanups.push(() => host.stop());
    expect(await host.exited).not.toBe(0);
    expect(host.lines.join("\n")).toMatch(/unable to verify the first certificate|self[- ]signed/);
  });

  it("with NODE_EXTRA_CA_CERTS the host and the worker connect as their own users and are ready", async () => {
    const { url, secrets, caFile } = await composeNats();
    const host = hostOf(url, secrets, caFile);
    cleanups.push(() => host.stop());
    await host.waitForEvent("host.ready", 60_000);
    const worker = spawnTs("services/agent/main.ts", {
      NATS_URL: url,
      PI_PREFIX: stack.env.prefix,
      NATS_USER: "worker1",
      NATS_PASSWORD: secrets.users.worker1,
      NODE_EXTRA_CA_CERTS: caFile,
    });
    cleanups.push(() => worker.stop());
    await worker.waitForEvent("worker.ready", 60_000);
  });
});
