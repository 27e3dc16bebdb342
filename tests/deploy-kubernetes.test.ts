// infra/kubernetes/ against the Kubernetes API schemas (kubernetes-models; prometheus-operator and
// cert-manager for their resources) and the wiring those cannot check: probes hit the routes the
// host serves on the port it listens on, every variable given is one the host or worker reads and
// its reader accepts, each ordinal's NATS users are the team's and their Secret keys the generator's,
// the NATS chart's values agree with the generated team file, the grace period covers the drain, and
// every metric an alert or the dashboard names is one the host exports.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { generateNatsConfig, natsUsers } from "../services/cli/nats-config.ts";
import { hostRpcUser, parseTeam } from "../services/cli/nats-team.ts";
import { isErrorCode } from "../services/protocol/error-codes.ts";
import {
  exportedMetrics,
  HTTP_ROUTES,
  hostConfigOf,
  listener,
  unreadVariables,
  workerConfigOf,
} from "./support/deploy-wiring.ts";
import { REPO_ROOT } from "./support/processes.ts";

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, checked field by field below
type Obj = Record<string, any>;
const K8S = path.join(REPO_ROOT, "infra/kubernetes");
const read = (p: string) => readFileSync(path.join(K8S, p), "utf8");
const kustomization = parse(read("base/kustomization.yaml")) as Obj;
const objects: Obj[] = (kustomization.resources as string[]).flatMap((f) =>
  parseAllDocuments(read(`base/${f}`)).map((d) => d.toJS() as Obj),
);
const team = parseTeam(read("team.kubernetes.yaml"));
const values = parse(read("nats/values.yaml")) as Obj;

function find(kind: string, name: string): Obj {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`infra/kubernetes/base has no ${kind} ${name}`);
  return o;
}
/** The configMapGenerator's literals of `name`, as the ConfigMap's data. */
function literals(name: string): Record<string, string> {
  const gen = (kustomization.configMapGenerator as Obj[]).find((g) => g.name === name);
  return Object.fromEntries(
    ((gen?.literals ?? []) as string[]).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}
const hosts = find("StatefulSet", "pihost-host");
const workers = find("StatefulSet", "pihost-worker");
const container = (set: Obj): Obj => set.spec.template.spec.containers[0];

/** The environment a pod's container gets: its ConfigMaps, its values with $(VAR) expanded. */
function podEnv(set: Obj, ordinal: number, secrets: Record<string, string>): Record<string, string> {
  const c = container(set);
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? [])
    if (from.configMapRef) Object.assign(env, literals(from.configMapRef.name));
  for (const e of c.env ?? []) {
    if (e.valueFrom?.fieldRef?.fieldPath === "metadata.name") env[e.name] = `${set.metadata.name}-${ordinal}`;
    else if (e.valueFrom?.secretKeyRef)
      env[e.name] = secrets[`${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`] ?? "";
    else env[e.name] = String(e.value).replace(/\$\((\w+)\)/g, (_, v: string) => env[v] ?? "");
  }
  return env;
}
/** What the container's command reads from its mounted Secret of NATS passwords. */
function passwordFiles(set: Obj): Record<string, string> {
  const c = container(set);
  const script = c.command.join(" ");
  const out: Record<string, string> = {};
  for (const m of script.matchAll(/(\w+)="\$\(cat ([^$]+)\$(\w+)\)"/g)) out[m[1]!] = `${m[2]}:${m[3]}`;
  return out;
}

async function modelOf(o: Obj): Promise<{ validate(): void }> {
  const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : ["", o.apiVersion];
  const module =
    group === "monitoring.coreos.com"
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${o.kind}`
      : group === "cert-manager.io"
        ? `@kubernetes-models/cert-manager/${group}/${version}/${o.kind}`
        : `kubernetes-models/${group ? `${group}/` : ""}${version}/${o.kind}`;
  const Model = (await import(module))[o.kind];
  return new Model(o);
}

describe("infra/kubernetes/base against the Kubernetes API schemas", () => {
  it("every object, and every generated ConfigMap and Secret, is valid", async () => {
    const generated = [
      ...(kustomization.configMapGenerator as Obj[]).map((g) => ({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: g.name },
        data: g.literals ? literals(g.name) : {},
      })),
      ...(kustomization.secretGenerator as Obj[]).map((g) => ({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: g.name },
        stringData: { x: "y" },
      })),
    ];
    expect(objects.length).toBeGreaterThan(15);
    for (const o of [...objects, ...generated]) {
      const model = await modelOf(o);
      expect(() => model.validate(), `${o.kind} ${o.metadata?.name}`).not.toThrow();
    }
  });

  it("the schemas are not vacuous: a replica count as text and a port as a word are refused", async () => {
    const broken = structuredClone(hosts);
    broken.spec.replicas = "3";
    await expect(async () => (await modelOf(broken)).validate()).rejects.toThrow(/replicas/);
    const badPort = structuredClone(find("Service", "pihost-host"));
    badPort.spec.ports[0].port = "http";
    await expect(async () => (await modelOf(badPort)).validate()).rejects.toThrow(/port/);
  });

  it("the CloudNativePG example names the database and owner the hosts' URL uses", () => {
    const cluster = parse(read("postgres/cluster.yaml")) as Obj;
    expect(cluster).toMatchObject({ apiVersion: "postgresql.cnpg.io/v1", kind: "Cluster" });
    expect(cluster.spec.bootstrap.initdb).toEqual({ database: "pihost", owner: "pihost" });
    expect(cluster.spec.postgresql.pg_hba).toEqual(["hostssl pihost pihost all scram-sha-256"]);
    const policy = find("NetworkPolicy", "pihost-host");
    const pg = policy.spec.egress.find((e: Obj) => e.ports[0].port === 5432);
    expect(pg.to[0].podSelector.matchLabels["cnpg.io/cluster"]).toBe(cluster.metadata.name);
  });
});

describe("the hosts", () => {
  const secrets = {
    "pihost-database/url": "postgres://pihost:x@pihost-db-rw:5432/pihost?sslmode=verify-full",
  };

  it("each ordinal is its own host: PI_HOST_ID = NATS_USER = the pod's name, a team host, with its -rpc user", () => {
    expect(hosts.spec.replicas).toBeLessThanOrEqual(team.hosts.length);
    const users = new Set(natsUsers(team).map((u) => u.name));
    for (let i = 0; i < hosts.spec.replicas; i++) {
      const env = podEnv(hosts, i, secrets);
      const config = hostConfigOf({ ...env, NATS_PASSWORD: "p", PI_NATS_RPC_PASSWORD: "p" });
      expect(config.hostId).toBe(`pihost-host-${i}`);
      expect(config.natsUser).toBe(config.hostId);
      expect(config.natsRpcUser).toBe(hostRpcUser(config.hostId));
      expect(users.has(config.hostId) && users.has(hostRpcUser(config.hostId))).toBe(true);
      expect(team.hosts).toContain(config.hostId);
      expect(config.devMode).toBe(false);
    }
  });

  it("gives only variables the host reads (POD_NAME only for the names), and reads both passwords from its Secret", () => {
    const env = podEnv(hosts, 0, secrets);
    expect(unreadVariables(env)).toEqual(["POD_NAME"]);
    expect(passwordFiles(hosts)).toEqual({
      NATS_PASSWORD: "/etc/pihost/nats-users/:NATS_USER",
      PI_NATS_RPC_PASSWORD: "/etc/pihost/nats-users/:PI_NATS_RPC_USER",
    });
    const mount = container(hosts).volumeMounts.find((m: Obj) => m.mountPath === "/etc/pihost/nats-users");
    const volume = hosts.spec.template.spec.volumes.find((v: Obj) => v.name === mount.name);
    expect(volume.secret.secretName).toBe("pihost-nats-hosts");
  });

  it("probes /readyz for readiness and /healthz for liveness and start, on the port PI_HTTP_LISTEN binds", () => {
    const c = container(hosts);
    const { port, wildcard } = listener(podEnv(hosts, 0, secrets));
    expect(wildcard).toBe(true);
    const named = c.ports.find((p: Obj) => p.name === "http");
    expect(named.containerPort).toBe(port);
    expect(c.readinessProbe.httpGet).toEqual({ path: HTTP_ROUTES.ready, port: "http" });
    expect(c.livenessProbe.httpGet).toEqual({ path: HTTP_ROUTES.health, port: "http" });
    expect(c.startupProbe.httpGet).toEqual({ path: HTTP_ROUTES.health, port: "http" });
    const monitor = find("PodMonitor", "pihost-host");
    expect(monitor.spec.podMetricsEndpoints[0]).toMatchObject({ port: "http", path: HTTP_ROUTES.metrics });
    expect(find("Service", "pihost-host").spec.ports[0].port).toBe(port);
  });

  it("gives the drain its time: preStop, then up to the drain grace of services/host/wiring/shutdown.ts, then the fence", () => {
    const main = readFileSync(path.join(REPO_ROOT, "services/host/wiring/shutdown.ts"), "utf8");
    const drainMs = Number(/const DRAIN_GRACE_MS = ([\d_]+);/.exec(main)?.[1]?.replaceAll("_", ""));
    expect(drainMs).toBe(3000);
    const preStop = container(hosts).lifecycle.preStop.sleep.seconds;
    expect(preStop + drainMs / 1000 + 5).toBeLessThanOrEqual(
      hosts.spec.template.spec.terminationGracePeriodSeconds,
    );
  });

  it("asks the runtime for exactly what bubblewrap needs, nothing privileged", () => {
    const pod = hosts.spec.template.spec;
    const sc = container(hosts).securityContext;
    expect(pod.hostUsers).toBe(false);
    expect(pod.securityContext.seccompProfile).toEqual({ type: "Unconfined" });
    expect(pod.securityContext.appArmorProfile).toEqual({ type: "Unconfined" });
    expect(sc.procMount).toBe("Unmasked");
    expect(sc.privileged).toBeUndefined();
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.readOnlyRootFilesystem).toBe(true);
    expect(sc.capabilities.drop).toEqual(["ALL"]);
    expect(sc.capabilities.add).not.toContain("SYS_ADMIN");
  });

  it("mounts the one ReadWriteMany workspace volume at PI_WORKSPACE_ROOTS, and the CA NODE_EXTRA_CA_CERTS names", () => {
    const env = podEnv(hosts, 0, secrets);
    const pvc = find("PersistentVolumeClaim", "pihost-workspaces");
    expect(pvc.spec.accessModes).toEqual(["ReadWriteMany"]);
    const volume = hosts.spec.template.spec.volumes.find((v: Obj) => v.persistentVolumeClaim);
    expect(volume.persistentVolumeClaim.claimName).toBe("pihost-workspaces");
    const mount = container(hosts).volumeMounts.find((m: Obj) => m.name === volume.name);
    expect(mount.mountPath).toBe(env.PI_WORKSPACE_ROOTS);
    const ca = container(hosts).volumeMounts.find((m: Obj) =>
      env.NODE_EXTRA_CA_CERTS?.startsWith(`${m.mountPath}/`),
    );
    const caVolume = hosts.spec.template.spec.volumes.find((v: Obj) => v.name === ca.name);
    expect(caVolume.secret.secretName).toBe(find("Certificate", "pihost-nats").spec.secretName);
    expect(caVolume.secret.items).toEqual([{ key: "ca.crt", path: path.basename(env.NODE_EXTRA_CA_CERTS!) }]);
  });
});

describe("the workers", () => {
  it("each ordinal is a team worker, unprivileged, NATS only, its reader accepting its settings and models.json", () => {
    expect(workers.spec.replicas).toBeLessThanOrEqual(team.workers.length);
    for (let i = 0; i < workers.spec.replicas; i++) {
      const env = podEnv(workers, i, {});
      expect(unreadVariables(env)).toEqual(["POD_NAME"]);
      expect(env.DATABASE_URL).toBeUndefined();
      const config = workerConfigOf({ ...env, NATS_PASSWORD: "p" }, "infra/kubernetes/base/models.json");
      expect(config.workerId).toBe(`pihost-worker-${i}`);
      expect(team.workers).toContain(config.workerId);
    }
    expect(passwordFiles(workers)).toEqual({ NATS_PASSWORD: "/etc/pihost/nats-users/:NATS_USER" });
    const pod = workers.spec.template.spec;
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container(workers).securityContext.capabilities.drop).toEqual(["ALL"]);
    expect(pod.volumes.map((v: Obj) => v.persistentVolumeClaim).filter(Boolean)).toEqual([]);
    expect(pod.volumes.find((v: Obj) => v.name === "nats-users").secret.secretName).toBe(
      "pihost-nats-workers",
    );
  });

  it("reach only NATS and DNS, and their model providers by a policy of its own", () => {
    const ports = (name: string) =>
      find("NetworkPolicy", name).spec.egress.flatMap((e: Obj) => e.ports.map((p: Obj) => p.port));
    expect(ports("pihost-worker").sort()).toEqual([4222, 53, 53].sort());
    expect(ports("pihost-worker-models")).toEqual([443]);
    expect(ports("pihost-host").sort()).toEqual([4222, 5432, 53, 53].sort());
    const deny = find("NetworkPolicy", "pihost-default-deny");
    expect(deny.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    for (const set of [hosts, workers])
      expect(set.spec.template.metadata.labels["app.kubernetes.io/part-of"]).toBe(
        deny.spec.podSelector.matchLabels["app.kubernetes.io/part-of"],
      );
  });
});

describe("the team's NATS", () => {
  it("base/nats-team.conf is what the generator writes for team.kubernetes.yaml, hashes aside", () => {
    const noHashes = (c: string) => c.replace(/password: "\$2[aby]\$\d\d\$[^"]+"/g, 'password: "<hash>"');
    const fresh = generateNatsConfig(team, { bcryptCost: 4 }).config;
    expect(noHashes(read("base/nats-team.conf"))).toBe(noHashes(fresh));
    const gen = (kustomization.secretGenerator as Obj[]).find((g) => g.name === "pihost-nats-team")!;
    expect(gen.files).toEqual(["nats.conf=nats-team.conf"]);
  });

  it("the chart includes it from the Secret, with the same port, store, TLS folders and websocket", () => {
    const c = values.config;
    expect(c.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(c.merge.zzz$include).toBe("./team/nats.conf");
    const mount = values.container.patch[0].value;
    expect(mount.mountPath).toBe("/etc/nats-config/team");
    const volume = values.podTemplate.patch[0].value;
    expect(volume).toEqual({ name: mount.name, secret: { secretName: "pihost-nats-team" } });
    expect(Number(team.listen.split(":").pop())).toBe(c.nats.port);
    expect(team.jetstream.storeDir).toBe(c.jetstream.fileStore.dir);
    expect(path.dirname(String(team.tls?.cert))).toBe(c.nats.tls.dir);
    expect(path.basename(String(team.tls?.cert))).toBe(c.nats.tls.cert);
    expect(path.dirname(String(team.websocket?.tls?.cert))).toBe(c.websocket.tls.dir);
    expect(Number(String(team.websocket?.listen).split(":").pop())).toBe(c.websocket.port);
    expect(c.nats.tls.secretName).toBe(find("Certificate", "pihost-nats").spec.secretName);
    // The hosts' NATS_URL is the chart's Service (release pihost-nats), which the policies select.
    const url = new URL(literals("pihost-host-settings").NATS_URL!);
    expect(url.hostname).toBe("pihost-nats");
    expect(find("Certificate", "pihost-nats").spec.dnsNames).toContain(url.hostname);
  });

  it("nats-secrets.mjs makes each role's Secret from the generator's secrets: keys exactly its users", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-k8s-"));
    try {
      const { secrets } = generateNatsConfig(team, { bcryptCost: 4 });
      writeFileSync(path.join(dir, "secrets.json"), JSON.stringify(secrets));
      const out = execFileSync(
        process.execPath,
        [
          path.join(K8S, "nats-secrets.mjs"),
          path.join(dir, "secrets.json"),
          path.join(K8S, "team.kubernetes.yaml"),
        ],
        { encoding: "utf8" },
      );
      const list = JSON.parse(out) as Obj;
      const byName = Object.fromEntries(list.items.map((s: Obj) => [s.metadata.name, s]));
      expect(Object.keys(byName["pihost-nats-hosts"].data).sort()).toEqual(
        team.hosts.flatMap((h) => [h, hostRpcUser(h)]).sort(),
      );
      expect(Object.keys(byName["pihost-nats-workers"].data).sort()).toEqual([...team.workers].sort());
      for (const s of list.items as Obj[]) {
        for (const [user, b64] of Object.entries(s.data as Record<string, string>))
          expect(Buffer.from(b64, "base64").toString()).toBe(secrets.users[user]);
        expect(Object.keys(s.data)).not.toContain("alice");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("alerts and the dashboard", () => {
  /** Series a rule may name besides the host's: Prometheus's own and kube-state-metrics' readiness. */
  const OTHERS = new Set(["up", "kube_pod_status_ready"]);
  const PROMQL_WORDS = new Set([
    ...["sum", "by", "rate", "increase", "histogram_quantile", "label_values", "clamp_min", "on"],
    ...["le", "host", "method", "code", "tool", "decision", "outcome", "namespace", "pod", "condition"],
  ]);
  const rules = find("PrometheusRule", "pihost").spec.groups.flatMap((g: Obj) => g.rules) as Obj[];
  const dashboard = JSON.parse(read("base/grafana-dashboard.json")) as Obj;
  const exprs: string[] = [
    ...rules.map((r) => String(r.expr)),
    ...dashboard.panels.flatMap((p: Obj) => p.targets.map((t: Obj) => String(t.expr))),
    ...dashboard.templating.list.filter((v: Obj) => v.query?.includes?.("(")).map((v: Obj) => v.query),
  ];

  it("name only metrics and labels the host exports (services/host/metrics.ts)", async () => {
    const exported = await exportedMetrics();
    const named = new Set<string>();
    for (const expr of exprs) {
      const code = expr.replace(/"[^"]*"/g, '""').replace(/\[[^\]]+\]/g, "");
      for (const m of code.matchAll(/\b([a-z_][a-z0-9_]*)\b(\{[^}]*\})?/g)) {
        const [, name, selector] = m as unknown as [string, string, string | undefined];
        if (PROMQL_WORDS.has(name) || /^\d/.test(name)) continue;
        named.add(name);
        if (OTHERS.has(name)) continue;
        expect(exported.has(name), `${name} in ${expr}`).toBe(true);
        for (const l of (selector ?? "").matchAll(/([a-z_]+)\s*[!=~]/g))
          expect(exported.get(name)?.has(l[1]!), `${name}{${l[1]}} in ${expr}`).toBe(true);
      }
      for (const by of expr.matchAll(/by \(([^)]*)\)/g))
        for (const label of by[1]!.split(",").map((s) => s.trim()))
          expect(
            [...exported.values()].some((ls) => ls.has(label)),
            `by (${label}) in ${expr}`,
          ).toBe(true);
    }
    for (const wanted of [
      "pihost_takeovers_total",
      "pihost_sandbox_failures_total",
      "pihost_approvals_total",
      "pihost_replies_total",
    ])
      expect(named.has(wanted), wanted).toBe(true);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        "PiHostNotReady",
        "PiHostTakeover",
        "PiHostSandboxFailures",
        "PiHostApprovalsExpired",
        "PiHostErrorReplies",
      ]),
    );
  });

  it("the error codes and outcomes they match are codes the host replies with", () => {
    for (const expr of exprs)
      for (const m of expr.matchAll(/(?:code|outcome)=~?"([^"]+)"/g))
        for (const code of m[1]!.split("|")) expect(isErrorCode(code), code).toBe(true);
  });

  it("the dashboard is the ConfigMap the Grafana sidecar loads", () => {
    const gen = (kustomization.configMapGenerator as Obj[]).find(
      (g) => g.name === "pihost-grafana-dashboard",
    )!;
    expect(gen.files).toEqual(["pihost.json=grafana-dashboard.json"]);
    expect(gen.options.labels).toEqual({ grafana_dashboard: "1" });
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(6);
  });
});

describe("the images", () => {
  it("every container runs an image kustomization.yaml sets, the host's with the image's default command", () => {
    const names = new Set((kustomization.images as Obj[]).map((i) => i.name));
    const sets = objects.filter((o) => o.spec?.template?.spec?.containers);
    for (const o of sets)
      for (const c of o.spec.template.spec.containers) expect(names.has(c.image), c.image).toBe(true);
    expect(container(hosts).command.at(-1)).toMatch(/exec node dist\/host\.js$/);
    expect(container(workers).command.at(-1)).toMatch(/exec node dist\/agent\.js$/);
  });
});
