// docs/machines/ holds exactly what `npm run machines:export` writes (CI fails on stale diagrams), and
// the diagram of the session machine cannot silently drop a state or a transition.
import { describe, expect, it } from "vitest";
import type { AnyStateNode } from "xstate";
import { machineToDot, machineToJson } from "../machines/export.ts";
import { sessionMachine } from "../machines/session.machine.ts";
import { compareArtifacts, loadMachines, renderArtifacts } from "../services/tools/machines-export.ts";

function allNodes(node: AnyStateNode): AnyStateNode[] {
  return [node, ...Object.values(node.states).flatMap((child) => allNodes(child))];
}

interface ConfigNode {
  on?: Record<string, unknown>;
  after?: Record<string, unknown>;
  always?: unknown;
  invoke?: ConfigInvoke | ConfigInvoke[];
  states?: Record<string, ConfigNode>;
}
interface ConfigInvoke {
  id?: string;
  src: unknown;
  onDone?: unknown;
  onError?: unknown;
}

/** The labels the author's config implies: event types, `after <delay>`, `done:`/`error: <invoke>`. */
function configLabels(node: ConfigNode): string[] {
  const labels = [...Object.keys(node.on ?? {}), ...Object.keys(node.after ?? {}).map((d) => `after ${d}`)];
  if (node.always !== undefined) labels.push("always");
  const invokes = node.invoke === undefined ? [] : Array.isArray(node.invoke) ? node.invoke : [node.invoke];
  for (const inv of invokes) {
    const name = inv.id ?? (typeof inv.src === "string" ? inv.src : "inline");
    if (inv.onDone !== undefined) labels.push(`done: ${name}`);
    if (inv.onError !== undefined) labels.push(`error: ${name}`);
  }
  return [...labels, ...Object.values(node.states ?? {}).flatMap((child) => configLabels(child))];
}

describe("machine export", () => {
  it("docs/machines/ is up to date with machines/*.machine.ts (fix: npm run machines:export)", async () => {
    const machines = await loadMachines();
    expect(machines.map((m) => m.id)).toContain("session");
    const expected = await renderArtifacts(machines);
    const result = await compareArtifacts(expected);
    expect(result, "docs/machines is stale: run `npm run machines:export` and commit").toEqual({
      stale: [],
      missing: [],
      extra: [],
    });
  });

  it("the session diagram names every state and every event of the config", () => {
    const dot = machineToDot(sessionMachine);
    for (const node of allNodes(sessionMachine.root)) expect(dot).toContain(`"${node.id}"`);
    const labels = configLabels(sessionMachine.config as ConfigNode);
    expect(labels).toContain("PROMPT");
    for (const label of labels) expect(dot).toContain(label);
  });

  it("the session diagram draws one edge per transition target", () => {
    let targets = 0;
    for (const node of allNodes(sessionMachine.root)) {
      const lists = [...node.transitions.values(), node.always ?? []];
      for (const list of lists) for (const t of list) targets += t.target?.length ?? 0;
    }
    // Initial markers have no label; every transition edge has one.
    const edges = machineToDot(sessionMachine)
      .split("\n")
      .filter((line) => / -> .*\[label=/.test(line));
    expect(targets).toBeGreaterThan(0);
    expect(edges).toHaveLength(targets);
  });

  it("the session JSON is the config, loadable as-is, always transitions included", () => {
    const text = machineToJson(sessionMachine);
    expect(text.endsWith("}\n")).toBe(true);
    const json = JSON.parse(text) as { id: string; states: Record<string, { always?: unknown }> };
    expect(json.id).toBe("session");
    expect(Object.keys(json.states)).toEqual(Object.keys(sessionMachine.root.states));
    expect(json.states.route?.always).toBeDefined();
    expect(machineToJson(sessionMachine)).toBe(text);
  });
});
