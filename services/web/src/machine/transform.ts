// Turns an exported XState definition (docs/machines/*.json) into an ELK graph to lay out, plus the
// states and transitions it drew. Pure: no DOM, no layout; viewer.ts runs elkjs and renders.
import type { ElkExtendedEdge, ElkLabel, ElkNode } from "elkjs/lib/elk-api.js";

type Json = Record<string, unknown>;

export type StateKind = "atomic" | "compound" | "parallel" | "final" | "history";
export type EdgeKind = "event" | "always" | "after" | "done" | "error" | "initial";

/** One state of the machine; `path` is its dotted path from the root (`running.waiting`), its ELK id. */
export interface StateInfo {
  path: string;
  key: string;
  parent: string | null;
  kind: StateKind;
  /** The state its parent (or the machine) enters first. */
  initial: boolean;
}

/** One drawn edge; `source` / `target` are ELK node ids (state paths or pseudo-node ids). */
export interface EdgeInfo {
  id: string;
  source: string;
  target: string;
  label: string;
  kind: EdgeKind;
}

/** A transition whose target names no state of the machine: not drawn, listed. */
export interface Unresolved {
  source: string;
  label: string;
  target: string;
}

export interface MachineGraph {
  id: string;
  graph: ElkNode;
  states: StateInfo[];
  edges: EdgeInfo[];
  /** Pseudo nodes: the initial-state dots (`__initial:<parent path>`) and `__any` (transitions of the machine itself). */
  pseudo: { id: string; kind: "initial" | "any" }[];
  unresolved: Unresolved[];
}

export interface TransformOptions {
  direction?: "DOWN" | "RIGHT";
}

/** Text sizes used for layout: the diagram is set in a monospace face so widths follow from lengths. */
export const METRICS = {
  stateFont: 13,
  edgeFont: 11,
  charWidth: 0.62,
  stateHeight: 34,
  statePadX: 14,
  minStateWidth: 64,
  compoundTop: 34,
  compoundPad: 14,
  initialSize: 12,
  anyWidth: 84,
};

export const ROOT_ID = "__root";
export const ANY_ID = "__any";
export const initialId = (parentPath: string): string => `__initial:${parentPath}`;

interface Node {
  path: string;
  key: string;
  config: Json;
  parent: Node | null;
  children: Map<string, Node>;
  kind: StateKind;
}

/**
 * The ELK graph of a definition: every state a node (nested states inside their parent), one edge per
 * transition target, labelled with its event (`PROMPT`, `done: loadSession`, `after 30000ms`, `always`;
 * a guard in brackets, candidates of one event numbered), duplicates dropped. Targets resolve the way
 * XState resolves them (`#id`, `.child`, sibling names, dotted paths); transitions without a target
 * draw nothing, and a target naming no state is reported in `unresolved`, not drawn.
 */
export function machineToElk(definition: Json, opts: TransformOptions = {}): MachineGraph {
  const machineId = typeof definition.id === "string" && definition.id !== "" ? definition.id : "machine";
  const root = buildTree(definition, "", "", null);
  const byId = new Map<string, Node>([[machineId, root]]);
  const states: StateInfo[] = [];
  walk(root, (n) => {
    if (n === root) return;
    const explicit = typeof n.config.id === "string" ? n.config.id : undefined;
    byId.set(explicit ?? `${machineId}.${n.path}`, n);
    states.push({
      path: n.path,
      key: n.key,
      parent: n.parent === root || n.parent === null ? null : n.parent.path,
      kind: n.kind,
      initial: n.parent !== null && initialKey(n.parent) === n.key,
    });
  });

  const edges: EdgeInfo[] = [];
  const unresolved: Unresolved[] = [];
  const pseudo: MachineGraph["pseudo"] = [];
  const seen = new Set<string>();
  const addEdge = (source: string, target: string, label: string, kind: EdgeKind) => {
    const key = `${source}\u0000${target}\u0000${label}`;
    if (seen.has(key)) return;
    seen.add(key);
    edges.push({ id: `e${edges.length}`, source, target, label, kind });
  };

  walk(root, (n) => {
    const sourceId = n === root ? ANY_ID : n.path;
    for (const t of transitionsOf(n.config)) {
      for (const target of t.targets) {
        const resolved = resolveTarget(target, n, root, byId);
        if (resolved === undefined || resolved === root) {
          unresolved.push({ source: n === root ? machineId : n.path, label: t.label, target });
          continue;
        }
        if (n === root && !pseudo.some((p) => p.id === ANY_ID)) pseudo.push({ id: ANY_ID, kind: "any" });
        addEdge(sourceId, resolved.path, t.label, t.kind);
      }
    }
    const first = initialKey(n);
    const child = first === undefined ? undefined : n.children.get(first);
    if (child !== undefined) {
      pseudo.push({ id: initialId(n.path), kind: "initial" });
      addEdge(initialId(n.path), child.path, "", "initial");
    }
  });

  const graph = toElk(root, edges, pseudo, opts.direction ?? "DOWN");
  return { id: machineId, graph, states, edges, pseudo, unresolved };
}

function buildTree(config: Json, key: string, path: string, parent: Node | null): Node {
  const node: Node = { path, key, config, parent, children: new Map(), kind: "atomic" };
  const children = asRecord(config.states);
  for (const [childKey, childConfig] of Object.entries(children ?? {})) {
    const childPath = path === "" ? childKey : `${path}.${childKey}`;
    node.children.set(childKey, buildTree(asRecord(childConfig) ?? {}, childKey, childPath, node));
  }
  const type = config.type;
  if (type === "parallel" || type === "final" || type === "history") node.kind = type;
  else if (node.children.size > 0) node.kind = "compound";
  return node;
}

function walk(node: Node, visit: (n: Node) => void): void {
  visit(node);
  for (const child of node.children.values()) walk(child, visit);
}

function initialKey(node: Node): string | undefined {
  if (node.kind === "parallel" || node.children.size === 0) return undefined;
  const initial = node.config.initial;
  if (typeof initial === "string") return initial;
  const target = asRecord(initial)?.target;
  if (typeof target === "string") return target.startsWith(".") ? target.slice(1) : target;
  return undefined;
}

interface Transition {
  label: string;
  targets: string[];
  kind: EdgeKind;
}

/** Every transition a state declares: `on`, `always`, `after`, `onDone` and each invoke's `onDone`/`onError`. */
function transitionsOf(config: Json): Transition[] {
  const out: Transition[] = [];
  const add = (label: string, value: unknown, kind: EdgeKind) => {
    const list = Array.isArray(value) ? value : [value];
    list.forEach((item, i) => {
      const t = typeof item === "string" ? { target: item } : asRecord(item);
      if (t === undefined) return;
      const guard = guardName(t.guard);
      // Candidates of one event are tried in order: number them when there is a choice.
      const order = list.length > 1 ? ` (${i + 1})` : "";
      out.push({
        label: `${label}${guard === undefined ? "" : ` [${guard}]`}${order}`,
        targets: targets(t),
        kind,
      });
    });
  };
  for (const [event, value] of Object.entries(asRecord(config.on) ?? {})) add(event, value, "event");
  if (config.always !== undefined) add("always", config.always, "always");
  for (const [delay, value] of Object.entries(asRecord(config.after) ?? {})) {
    add(/^\d+$/.test(delay) ? `after ${delay}ms` : `after ${delay}`, value, "after");
  }
  if (config.onDone !== undefined) add("done", config.onDone, "done");
  const invokes = Array.isArray(config.invoke)
    ? config.invoke
    : config.invoke === undefined
      ? []
      : [config.invoke];
  for (const inv of invokes) {
    const r = asRecord(inv);
    if (r === undefined) continue;
    const name = invokeName(r);
    if (r.onDone !== undefined) add(`done: ${name}`, r.onDone, "done");
    if (r.onError !== undefined) add(`error: ${name}`, r.onError, "error");
  }
  return out;
}

function targets(t: Json): string[] {
  const target = t.target;
  if (typeof target === "string") return [target];
  if (Array.isArray(target)) return target.filter((x): x is string => typeof x === "string");
  return [];
}

function invokeName(inv: Json): string {
  if (typeof inv.id === "string" && inv.id !== "") return inv.id;
  if (typeof inv.src === "string") return inv.src;
  const type = asRecord(inv.src)?.type;
  return typeof type === "string" ? type : "inline";
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === "string") return guard;
  const type = asRecord(guard)?.type;
  return typeof type === "string" ? type : "inline";
}

/** XState's resolution: `#id[.path]`, `.child[.path]` below the source, otherwise a path from the source's parent. */
function resolveTarget(target: string, source: Node, root: Node, byId: Map<string, Node>): Node | undefined {
  if (target.startsWith("#")) {
    const [id = "", ...rest] = target.slice(1).split(".");
    const base = byId.get(id) ?? byId.get(target.slice(1));
    if (base === undefined) return undefined;
    return byId.has(id) ? descend(base, rest) : base;
  }
  if (target.startsWith(".")) return descend(source, target.slice(1).split("."));
  // The machine itself has no siblings: XState refuses a bare name there; read it as a child.
  return descend(source.parent ?? root, target.split("."));
}

function descend(node: Node, path: string[]): Node | undefined {
  let at: Node | undefined = node;
  for (const key of path) {
    if (key === "") continue;
    at = at?.children.get(key);
    if (at === undefined) return undefined;
  }
  return at;
}

/** Width of `text` in the monospace face at `fontSize`. */
export function textWidth(text: string, fontSize: number): number {
  return Math.ceil([...text].length * fontSize * METRICS.charWidth);
}

function toElk(root: Node, edges: EdgeInfo[], pseudo: MachineGraph["pseudo"], direction: string): ElkNode {
  const m = METRICS;
  const nodes = new Map<string, ElkNode>();
  const build = (n: Node): ElkNode => {
    const children: ElkNode[] = [];
    if (pseudo.some((p) => p.id === initialId(n.path))) {
      children.push({ id: initialId(n.path), width: m.initialSize, height: m.initialSize });
    }
    for (const child of n.children.values()) children.push(build(child));
    const elk: ElkNode =
      n === root
        ? { id: ROOT_ID, children, edges: [] }
        : children.length > 0
          ? {
              id: n.path,
              children,
              edges: [],
              // Room at the top for the state's name.
              layoutOptions: {
                "elk.padding": `[top=${m.compoundTop},left=${m.compoundPad},bottom=${m.compoundPad},right=${m.compoundPad}]`,
                "elk.nodeSize.constraints": "MINIMUM_SIZE",
                "elk.nodeSize.minimum": `(${textWidth(n.key, m.stateFont) + 2 * m.statePadX}, ${m.stateHeight})`,
              },
            }
          : {
              id: n.path,
              width: Math.max(m.minStateWidth, textWidth(n.key, m.stateFont) + 2 * m.statePadX),
              height: m.stateHeight,
            };
    nodes.set(n === root ? ROOT_ID : n.path, elk);
    return elk;
  };
  const graph = build(root);
  if (pseudo.some((p) => p.id === ANY_ID)) {
    graph.children = [{ id: ANY_ID, width: m.anyWidth, height: m.stateHeight }, ...(graph.children ?? [])];
  }
  graph.layoutOptions = {
    "elk.algorithm": "layered",
    "elk.direction": direction,
    "elk.hierarchyHandling": "INCLUDE_CHILDREN",
    "elk.json.shapeCoords": "ROOT",
    "elk.json.edgeCoords": "ROOT",
    "elk.edgeLabels.placement": "CENTER",
    "elk.padding": "[top=16,left=16,bottom=16,right=16]",
    "elk.spacing.nodeNode": "28",
    "elk.layered.spacing.nodeNodeBetweenLayers": "40",
    "elk.spacing.edgeLabel": "4",
    "elk.spacing.edgeNode": "16",
    "elk.layered.cycleBreaking.strategy": "MODEL_ORDER",
    "elk.layered.nodePlacement.strategy": "NETWORK_SIMPLEX",
    "elk.layered.spacing.edgeEdgeBetweenLayers": "6",
    "elk.spacing.edgeEdge": "6",
  };
  // Each edge lives in the lowest state containing both ends, as ELK expects.
  const parentOf = (id: string): string => {
    if (id === ANY_ID) return ROOT_ID;
    if (id.startsWith("__initial:")) return id.slice("__initial:".length) || ROOT_ID;
    const dot = id.lastIndexOf(".");
    return dot < 0 ? ROOT_ID : id.slice(0, dot);
  };
  const ancestors = (id: string): string[] => {
    const out: string[] = [];
    for (let at = parentOf(id); ; at = parentOf(at)) {
      out.push(at);
      if (at === ROOT_ID) return out;
    }
  };
  for (const e of edges) {
    const up = new Set(ancestors(e.source));
    // A state's edge to its own descendant lives in that state.
    const container = e.target.startsWith(`${e.source}.`)
      ? e.source
      : (ancestors(e.target).find((a) => up.has(a)) ?? ROOT_ID);
    const labels: ElkLabel[] =
      e.label === ""
        ? []
        : [{ text: e.label, width: textWidth(e.label, m.edgeFont) + 4, height: m.edgeFont + 5 }];
    const elkEdge: ElkExtendedEdge = { id: e.id, sources: [e.source], targets: [e.target], labels };
    nodes.get(container)?.edges?.push(elkEdge);
  }
  return graph;
}

function asRecord(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}
