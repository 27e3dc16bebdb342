#!/usr/bin/env node
// The NATS passwords of `pihost nats-config --secrets FILE` as the two Secrets the pods mount
// (docs/operations.md "Kubernetes"): pihost-nats-hosts holds each host's `<host>` and `<host>-rpc`,
// pihost-nats-workers each worker's, one key per user; people's passwords are never in the cluster.
// Prints a Kubernetes List (JSON) for `kubectl apply -n pihost -f -`:
//
//   node infra/kubernetes/nats-secrets.mjs .kubernetes/secrets.json infra/kubernetes/team.kubernetes.yaml
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const [secretsFile, teamFile] = process.argv.slice(2);
if (!secretsFile || !teamFile) {
  process.stderr.write("usage: nats-secrets.mjs SECRETS_JSON TEAM_YAML\n");
  process.exit(2);
}
const { users } = JSON.parse(readFileSync(secretsFile, "utf8"));
const team = parse(readFileSync(teamFile, "utf8"));
const pick = (names) =>
  Object.fromEntries(
    names.map((name) => {
      if (typeof users[name] !== "string") throw new Error(`${secretsFile} has no password for ${name}`);
      return [name, Buffer.from(users[name]).toString("base64")];
    }),
  );
const secret = (name, data) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name },
  type: "Opaque",
  data,
});
const hosts = team.hosts.flatMap((h) => [h, `${h}-rpc`]);
process.stdout.write(
  `${JSON.stringify(
    {
      apiVersion: "v1",
      kind: "List",
      items: [secret("pihost-nats-hosts", pick(hosts)), secret("pihost-nats-workers", pick(team.workers))],
    },
    null,
    2,
  )}\n`,
);
