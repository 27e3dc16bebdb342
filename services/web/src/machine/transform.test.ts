// transform.ts against the real exports in docs/machines and small definitions for the target forms
// XState accepts. XState itself is the oracle: createMachine resolves the same JSON's targets.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ElkNode } from "elkjs/lib/elk-api.js";
import { describe, expect, it } from "vitest";
import { type AnyStateNode, createMachine } from "xstate";
import { ANY_ID, type MachineGraph, machineToElk, ROOT_ID } from "./transform.ts";

const machinesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../docs/machines");
const files = readdirSync(machinesDir).filter((f) => f.endsWith(".json"));
const load = (file: string) =>
  JSON.parse(readFileSync(path.join(machinesDir, file), "utf8")) as Record<string, unknown>;

/** Every ELK node id with the id of the ELK node that contains it. */
function elkParents(graph: ElkNode): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (n: ElkNode) => {
    for (const c of n.children ?? []) {
      expect(out.has(c.id), `node id ${c.id} used twice`).toBe(false);
      out.set(c.id, n.id);
      visit(c);
    }
  };
  visit(graph);
  return out;
}

function elkEdges(graph: ElkNode): { id: string; source: string; target: string; container: string }[] {
  const out: { id: string; source: string; target: string; container: string }[] = [];
  const visit = (n: ElkNode) => {
    for (const e of n.edges ?? []) {
      expect(e.sources).toHaveLength(1);
      expect(e.targets).toHaveLength(1);
      out.push({ id: e.id, source: e.sources[0]!, target: e.targets[0]!, container: n.id });
    }
    for (const c of n.children ?? []) visit(c);
  };
  visit(graph);
  return out;
}

/** The (source, target) pairs XState resolves for a definition: its own reading of every target. */
function xstatePairs(definition: Record<string, unknown>): Set<string> {
  const machine = createMachine(definition as Parameters<typeof createMachine>[0]);
  const pairs = new Set<string>();
  const visit = (node: AnyStateNode) => {
    const source = node === machine.root ? ANY_ID : node.path.join(".");
    const lists = [...node.transitions.values(), node.always ?? []];
    for (const list of lists)
      for (const t of list)
        for (const target of t.target ?? []) pairs.add(`${source} -> ${target.path.join(".")}`);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return pairs;
}

function xstatePaths(definition: Record<string, unknown>): string[] {
  const machine = createMachine(definition as Parameters<typeof createMachine>[0]);
  const out: string[] = [];
  const visit = (node: AnyStateNode) => {
    if (node !== machine.root) out.push(node.path.join("."));
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return out;
}

function checkGraph(definition: Record<string, unknown>, g: MachineGraph) {
  const parents = elkParents(g.graph);
  // Every state is a node, inside its parent's node.
  expect(g.states.map((s) => s.path).sort()).toEqual(xstatePaths(definition).sort());
  for (const s of g.states) expect(parents.get(s.path), s.path).toBe(s.parent ?? ROOT_ID);
  // Every transition is an edge between existing nodes, lives in a node containing both ends, once.
  const edges = elkEdges(g.graph);
  expect(edges.map((e) => e.id).sort()).toEqual(g.edges.map((e) => e.id).sort());
  const ancestorsOrSelf = (id: string): string[] => {
    const out = [id];
    for (let at = parents.get(id); at !== undefined; at = parents.get(at)) out.push(at);
    return out;
  };
  for (const e of edges) {
    expect(parents.has(e.source), `${e.id} source ${e.source}`).toBe(true);
    expect(parents.has(e.target), `${e.id} target ${e.target}`).toBe(true);
    expect(ancestorsOrSelf(e.source)).toContain(e.container);
    expect(ancestorsOrSelf(e.target)).toContain(e.container);
  }
  const keys = g.edges.map((e) => `${e.source}|${e.target}|${e.label}`);
  expect(new Set(keys).size).toBe(keys.length);
  const drawn = new Set(g.edges.filter((e) => e.kind !== "initial").map((e) => `${e.source} -> ${e.target}`));
  expect(drawn).toEqual(xstatePairs(definition));
  // Every node with children (and the machine) has an initial dot pointing at its initial state.
  for (const e of g.edges.filter((x) => x.kind === "initial")) {
    expect(g.states.find((s) => s.path === e.target)?.initial).toBe(true);
  }
}

describe("machineToElk on docs/machines", () => {
  it("finds the exported machines", () => {
    expect(files).toEqual(expect.arrayContaining(["session.json", "turn.json"]));
  });

  for (const file of files) {
    it(`${file}: every state a node, every transition an edge to an existing node`, () => {
      const def = load(file);
      const g = machineToElk(def);
      expect(g.id).toBe(def.id);
      expect(g.unresolved).toEqual([]);
      checkGraph(def, g);
    });
  }

  it("session.json: labels name events, invokes, delays and guards; initial is loading", () => {
    const g = machineToElk(load("session.json"));
    const has = (source: string, target: string, label: string) =>
      expect(g.edges).toContainEqual(expect.objectContaining({ source, target, label }));
    has("idle", "prompting", "PROMPT");
    has("loading", "route", "done: loadSession");
    has("prompting", "idle", "error: startTurn");
    has("route", "parked", "always [isParked] (1)");
    has("route", "idle", "always (4)");
    has("parked", "expiring", "after approvalDeadline");
    has("__initial:", "loading", "");
    expect(g.states.filter((s) => s.initial).map((s) => s.path)).toEqual(["loading"]);
    // Targetless handlers (the machine-level PROMPT, idle's ABORT) draw nothing.
    expect(g.edges.some((e) => e.source === ANY_ID)).toBe(false);
    expect(g.edges.find((e) => e.label === "error: startTurn")?.kind).toBe("error");
    expect(g.edges.find((e) => e.label === "always (4)")?.kind).toBe("always");
  });

  it("turn.json: final states and the self-transition of offered", () => {
    const g = machineToElk(load("turn.json"));
    expect(g.states.filter((s) => s.kind === "final").map((s) => s.path)).toEqual([
      "parked",
      "lost",
      "revoked",
    ]);
    expect(g.edges).toContainEqual(
      expect.objectContaining({
        source: "offered",
        target: "offered",
        label: "after offerInterval",
        kind: "after",
      }),
    );
    expect(g.edges).toContainEqual(
      expect.objectContaining({ source: "offered", target: "claiming", label: "TAKE" }),
    );
  });
});

describe("machineToElk target forms", () => {
  const nested = {
    id: "demo",
    initial: "idle",
    on: { RESET: ".idle", HALT: { target: "#demo.done" } },
    states: {
      idle: {
        on: {
          GO: "running",
          DEEP: "running.busy.inner",
          TWICE: { target: ["running", "running"] },
          STAY: { actions: "log" },
        },
        after: { 30000: "done", 500: { target: "running" } },
      },
      running: {
        initial: "waiting",
        on: { TO_CHILD: ".busy", JUMP: "#far", NOWHERE: "missing" },
        onDone: "done",
        states: {
          waiting: { always: [{ guard: "ready", target: "busy" }, { target: "waiting" }] },
          busy: {
            id: "far",
            initial: "inner",
            invoke: { src: "work", onDone: "#demo.idle", onError: { target: "..waiting" } },
            states: { inner: { on: { UP: "#demo.running.waiting", FINISH: "#demo.running.end" } } },
          },
          end: { type: "final" },
        },
      },
      done: { type: "final" },
    },
  };

  it("resolves #id, #machine.path, .child, siblings and dotted paths the way XState does", () => {
    const def = structuredClone(nested) as Record<string, unknown>;
    // `..waiting` and `missing` name nothing: XState refuses them (the transform lists them, below).
    const running = (def.states as Record<string, Record<string, unknown>>).running!;
    const busy = (running.states as Record<string, Record<string, unknown>>).busy!;
    (busy.invoke as Record<string, unknown>).onError = { target: "waiting" };
    delete (running.on as Record<string, unknown>).NOWHERE;
    checkGraph(def, machineToElk(def));
  });

  it("names each edge, drops duplicates and lists targets that name no state", () => {
    const g = machineToElk(nested);
    const label = (source: string, target: string) =>
      g.edges
        .filter((e) => e.source === source && e.target === target)
        .map((e) => e.label)
        .sort();
    expect(label("idle", "done")).toEqual(["after 30000ms"]);
    expect(label("idle", "running")).toEqual(["GO", "TWICE", "after 500ms"]);
    expect(label("idle", "running.busy.inner")).toEqual(["DEEP"]);
    expect(label("running", "running.busy")).toEqual(["JUMP", "TO_CHILD"]);
    expect(label("running", "done")).toEqual(["done"]);
    expect(label("running.waiting", "running.busy")).toEqual(["always [ready] (1)"]);
    expect(label("running.waiting", "running.waiting")).toEqual(["always (2)"]);
    expect(label("running.busy", "idle")).toEqual(["done: work"]);
    expect(label("running.busy.inner", "running.waiting")).toEqual(["UP"]);
    expect(label("running.busy.inner", "running.end")).toEqual(["FINISH"]);
    expect(label(ANY_ID, "idle")).toEqual(["RESET"]);
    expect(label(ANY_ID, "done")).toEqual(["HALT"]);
    expect(g.pseudo.map((p) => p.id).sort()).toEqual(
      [ANY_ID, "__initial:", "__initial:running", "__initial:running.busy"].sort(),
    );
    expect(g.unresolved).toEqual([
      { source: "running", label: "NOWHERE", target: "missing" },
      { source: "running.busy", label: "error: work", target: "..waiting" },
    ]);
  });

  it("places an edge to a descendant inside the ancestor, and cross edges in the common ancestor", () => {
    const g = machineToElk(nested);
    const containers = new Map(elkEdges(g.graph).map((e) => [`${e.source}->${e.target}`, e.container]));
    expect(containers.get("running->running.busy")).toBe("running");
    expect(containers.get("running.busy.inner->running.waiting")).toBe("running");
    expect(containers.get("idle->running.busy.inner")).toBe(ROOT_ID);
    expect(containers.get("__initial:running.busy->running.busy.inner")).toBe("running.busy");
  });

  it("tolerates a definition without states or id", () => {
    const g = machineToElk({});
    expect(g.id).toBe("machine");
    expect(g.states).toEqual([]);
    expect(g.edges).toEqual([]);
  });
});
