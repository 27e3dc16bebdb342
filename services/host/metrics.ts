// The host's Prometheus metrics (docs/operations.md, "Health and metrics"): one registry of its own,
// and the small interface the rest of the host counts through. Only this module imports prom-client;
// no label carries a principal, session, turn or request id.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { BUILTIN_TOOL_NAMES } from "../protocol/plugin-schemas.ts";
import { METHODS } from "../protocol/methods.ts";

/** What the host counts; every call is cheap and never throws. */
export interface HostMetrics {
  /** A request arrived for `method` (a METHODS name, `forward`, `test` or `unknown`). */
  request(method: string): void;
  /** Its reply went out: `code` is `ok` or the error code; `seconds` since the request arrived. */
  reply(method: string, code: string, seconds: number): void;
  /** A tool call's recorded decision; a tool name that is neither built-in nor a plugin is `unknown`. */
  toolDecision(tool: string, toolClass: string, decision: string): void;
  /** A plans.resolve that ended: the action on success (`approve`, `reject`), else the error code. */
  approval(outcome: string): void;
  fence(): void;
  takeover(): void;
  actorRestart(): void;
  sandboxStart(): void;
  sandboxFailure(): void;
}

/** Metrics with the Prometheus registry they are exposed from (http-listener.ts). */
export interface HostMetricsRegistry extends HostMetrics {
  /** The text exposition format, leases read first. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

/** The methods whose latency has its own histogram: authorization, approve and claim. */
const TIMED = new Set(["tools.execute", "plans.resolve", "claim"]);
const KNOWN_METHODS = new Set([...Object.keys(METHODS), "forward", "test"]);

/** A method label: a known name as is, anything else `unknown` (a subject is caller-chosen). */
export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "unknown";
}

/** A tool label: a built-in's name, `plugin`, or `unknown` (a name a model invented). */
export function toolLabel(tool: string, isPlugin: boolean): string {
  if (BUILTIN_TOOL_NAMES.has(tool)) return tool;
  return isPlugin ? "plugin" : "unknown";
}

/** Error codes and outcomes are identifiers; anything else would be an unbounded label. */
const codeLabel = (code: string) => (/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(code) ? code : "unknown");

export function createHostMetrics(deps: {
  hostId: string;
  /** The session leases this host owns, read at each scrape (null: the database did not answer). */
  leasesOwned: () => Promise<number | null>;
}): HostMetricsRegistry {
  const registry = new Registry();
  registry.setDefaultLabels({ host: deps.hostId });
  const c = (name: string, help: string, labelNames: string[] = []) =>
    new Counter({ name, help, labelNames, registers: [registry] });
  const requests = c("pihost_requests_total", "Requests received, by method", ["method"]);
  const replies = c("pihost_replies_total", "Replies sent, by method and code (ok or the error code)", [
    "method",
    "code",
  ]);
  const decisions = c("pihost_tool_decisions_total", "Recorded tool-call decisions", [
    "tool",
    "tool_class",
    "decision",
  ]);
  const approvals = c("pihost_approvals_total", "plans.resolve outcomes", ["outcome"]);
  const fences = c("pihost_fences_total", "Startup fences run by this process");
  const takeovers = c("pihost_takeovers_total", "Dead hosts whose sessions this host took over");
  const restarts = c("pihost_actor_restarts_total", "Session actors restarted after a failure");
  const sandboxStarts = c("pihost_sandbox_starts_total", "Sandboxes started");
  const sandboxFailures = c("pihost_sandbox_failures_total", "Sandboxes that failed to start or run");
  const latency = new Histogram({
    name: "pihost_request_duration_seconds",
    help: "Time from request to reply for tools.execute (authorization), plans.resolve (approve) and claim",
    labelNames: ["method"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const leases = new Gauge({
    name: "pihost_leases_owned",
    help: "Session leases this host owns (read from the database at each scrape)",
    registers: [registry],
  });
  return {
    request: (method) => requests.inc({ method: methodLabel(method) }),
    reply(method, code, seconds) {
      const m = methodLabel(method);
      replies.inc({ method: m, code: codeLabel(code) });
      if (TIMED.has(m)) latency.observe({ method: m }, seconds);
    },
    toolDecision: (tool, toolClass, decision) =>
      decisions.inc({ tool: toolLabel(tool, toolClass === "plugin"), tool_class: toolClass, decision }),
    approval: (outcome) => approvals.inc({ outcome: codeLabel(outcome) }),
    fence: () => fences.inc(),
    takeover: () => takeovers.inc(),
    actorRestart: () => restarts.inc(),
    sandboxStart: () => sandboxStarts.inc(),
    sandboxFailure: () => sandboxFailures.inc(),
    async scrape() {
      const n = await deps.leasesOwned().catch(() => null);
      if (n !== null) leases.set(n);
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
