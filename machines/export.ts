// Turns an XState machine into the text docs/machines/ holds: its config as JSON that Stately's
// visualizer and inspector load, and a Graphviz DOT diagram. Pure: services/tools/machines-export.ts
// finds the machines, renders the DOT to SVG and does the reading and writing.
import type { AnyStateMachine, AnyStateNode } from "xstate";

/** True for an XState v5 machine (duck-typed, so a second copy of xstate still counts). */
export function isStateMachine(value: unknown): value is AnyStateMachine {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.id === "string" &&
    typeof v.config === "object" &&
    v.config !== null &&
    typeof v.root === "object" &&
    v.root !== null &&
    "definition" in v &&
    typeof v.transition === "function"
  );
}

/**
 * The machine's own config as JSON, serialised the way @statelyai/inspect sends it to the Stately
 * inspector: a function becomes `{ "type": <its name> }`, where a built-in action keeps its XState type
 * (`xstate.assign`) and an inline arrow, named after nothing but its property, is `inline`. The config,
 * not `machine.definition`, because the definition drops `always` transitions. Keys keep source order
 * (state order is document order); 2-space indent and a trailing newline. Refuses (throws) a config
 * that refers to itself.
 */
export function machineToJson(machine: AnyStateMachine): string {
  return `${JSON.stringify(toPlain(machine.config, [], ""), null, 2)}\n`;
}

function functionName(fn: { name: string; type?: unknown }, key: string): string {
  if (typeof fn.type === "string") return fn.type;
  return fn.name && fn.name !== key ? fn.name : "inline";
}

type Plain = null | boolean | number | string | Plain[] | { [key: string]: Plain };

function toPlain(value: unknown, stack: object[], key: string): Plain | undefined {
  if (value === null) return null;
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : null;
    case "function":
      return { type: functionName(value as { name: string; type?: unknown }, key) };
    case "object":
      break;
    default:
      return undefined; // undefined, symbol, bigint: not part of a loadable config
  }
  const obj = value as object;
  // Inline actor logic: a machine by its id, any other logic as "inline" (it has no serial form).
  if (isStateMachine(obj)) return obj.id;
  if (typeof (obj as { getInitialSnapshot?: unknown }).getInitialSnapshot === "function") return "inline";
  if (stack.includes(obj)) throw new Error("machine config refers to itself; cannot serialise it");
  stack.push(obj);
  let out: Plain;
  if (Array.isArray(obj)) {
    out = obj.map((item, i) => toPlain(item, stack, String(i)) ?? null);
  } else {
    const record: { [key: string]: Plain } = {};
    for (const [name, item] of Object.entries(obj)) {
      const plain = toPlain(item, stack, name);
      if (plain !== undefined) record[name] = plain;
    }
    out = record;
  }
  stack.pop();
  return out;
}

interface Edge {
  source: AnyStateNode;
  target: AnyStateNode;
  label: string;
  kind: "event" | "always" | "error";
}

/**
 * A Graphviz DOT digraph of the machine: compound and parallel states as clusters (parallel dashed),
 * a filled dot for each initial state, one edge per transition target labelled with its event
 * (`done: startTurn`, `after approvalDeadline`, `always [isParked]`), final states double-circled.
 * Transitions without a target are listed inside their state below a line, so none is dropped.
 * The same machine always gives the same text.
 */
export function machineToDot(machine: AnyStateMachine): string {
  const edges: Edge[] = [];
  const stay = new Map<AnyStateNode, string[]>();
  for (const node of allNodes(machine.root)) {
    for (const t of transitionsOf(node)) {
      if (t.targets.length === 0) {
        const actions = t.actions.length > 0 ? ` / ${t.actions.join(", ")}` : "";
        stay.set(node, [...(stay.get(node) ?? []), `${t.label}${actions}`]);
      }
      for (const target of t.targets) edges.push({ source: node, target, label: t.label, kind: t.kind });
    }
  }
  const anchored = new Set<AnyStateNode>();
  for (const e of edges) {
    if (isCluster(e.source)) anchored.add(e.source);
    if (isCluster(e.target)) anchored.add(e.target);
  }

  const lines = [
    `digraph ${q(machine.id)} {`,
    '  graph [compound=true, newrank=true, rankdir=LR, fontname="Helvetica", fontsize=12, nodesep=0.35, ranksep=0.45];',
    '  node [fontname="Helvetica", fontsize=11, shape=box, style=rounded, margin="0.12,0.06"];',
    '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.7];',
  ];
  emitState(machine.root, "  ", lines, stay, anchored);
  for (const e of edges) lines.push(`  ${edgeLine(e)}`);
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

interface Transition {
  label: string;
  targets: AnyStateNode[];
  actions: string[];
  kind: Edge["kind"];
}

function allNodes(root: AnyStateNode): AnyStateNode[] {
  return [root, ...Object.values(root.states).flatMap((child) => allNodes(child))];
}

function transitionsOf(node: AnyStateNode): Transition[] {
  const out: Transition[] = [];
  const add = (eventLabel: string, list: readonly AnyTransition[], kind: Edge["kind"]) => {
    list.forEach((t, i) => {
      const guard = guardName(t.guard);
      // Candidates of one event are tried in order: number them when there is a choice.
      const order = list.length > 1 ? ` (${i + 1})` : "";
      out.push({
        label: `${eventLabel}${guard === undefined ? "" : ` [${guard}]`}${order}`,
        targets: [...(t.target ?? [])],
        actions: t.actions.map(actionName).filter((a): a is string => a !== undefined),
        kind,
      });
    });
  };
  for (const [eventType, list] of node.transitions) {
    add(eventLabel(node, eventType), list, eventType.startsWith("xstate.error.") ? "error" : "event");
  }
  if (node.always) add("always", node.always, "always");
  return out;
}

type AnyTransition = AnyStateNode["always"] extends (infer T)[] | undefined ? T : never;

/** Shortens XState's internal event types to what the machine's author wrote. */
function eventLabel(node: AnyStateNode, eventType: string): string {
  for (const [prefix, word] of [
    ["xstate.done.actor.", "done"],
    ["xstate.error.actor.", "error"],
  ] as const) {
    if (eventType.startsWith(prefix)) {
      const id = eventType.slice(prefix.length);
      const index = node.invoke.findIndex((inv) => inv.id === id);
      const inv = node.invoke[index];
      // An invoke without an id gets "<index>.<state id>": name it by its src instead.
      const name = inv && id === `${index}.${node.id}` ? invokeName(inv.src) : id;
      return `${word}: ${name}`;
    }
  }
  if (eventType.startsWith("xstate.done.state.")) return "done";
  if (eventType.startsWith("xstate.after.")) {
    const delay = node.after.find((t) => t.eventType === eventType)?.delay;
    if (typeof delay === "number") return `after ${delay}ms`;
    if (typeof delay === "string") return `after ${delay}`;
    return "after (inline)";
  }
  return eventType;
}

function invokeName(src: unknown): string {
  return typeof src === "string" && !src.startsWith("xstate.invoke.") ? src : "inline";
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === "string") return guard;
  if (typeof guard === "function") {
    const g = guard as { name: string; guards?: unknown[]; stateValue?: unknown };
    if (Array.isArray(g.guards) && (g.name === "and" || g.name === "or" || g.name === "not")) {
      return `${g.name}(${g.guards.map((inner) => guardName(inner) ?? "inline").join(", ")})`;
    }
    if (g.name === "stateIn" && g.stateValue !== undefined) return `stateIn(${JSON.stringify(g.stateValue)})`;
    // An inline arrow takes the property name "guard"; that names nothing.
    return g.name && g.name !== "guard" ? g.name : "inline";
  }
  if (typeof guard === "object" && typeof (guard as { type?: unknown }).type === "string") {
    return (guard as { type: string }).type;
  }
  return "inline";
}

/** Named actions only; inline functions and built-ins (assign, raise) have no useful name. */
function actionName(action: unknown): string | undefined {
  if (typeof action === "string") return action;
  if (typeof action === "object" && action !== null) {
    const type = (action as { type?: unknown }).type;
    if (typeof type === "string") return type;
  }
  return undefined;
}

function isCluster(node: AnyStateNode): boolean {
  return node.type === "compound" || node.type === "parallel";
}

function initialId(node: AnyStateNode): string {
  return `${node.id}.__initial`;
}

function anchorId(node: AnyStateNode): string {
  return node.type === "compound" ? initialId(node) : `${node.id}.__anchor`;
}

function emitState(
  node: AnyStateNode,
  pad: string,
  lines: string[],
  stay: Map<AnyStateNode, string[]>,
  anchored: Set<AnyStateNode>,
): void {
  const rows = detailRows(node, stay.get(node) ?? []);
  if (!isCluster(node)) {
    if (node.type === "history") {
      lines.push(
        `${pad}${q(node.id)} [shape=circle, style="", label=${q(node.history === "deep" ? "H*" : "H")}];`,
      );
    } else if (node.type === "final") {
      lines.push(
        `${pad}${q(node.id)} [shape=doublecircle, style="", margin=0.04, label=${htmlLabel(node.key, rows)}];`,
      );
    } else {
      lines.push(`${pad}${q(node.id)} [label=${htmlLabel(node.key, rows)}];`);
    }
    return;
  }
  lines.push(`${pad}subgraph ${q(`cluster_${node.id}`)} {`);
  const style = node.type === "parallel" ? "rounded,dashed" : "rounded";
  lines.push(`${pad}  graph [label=${htmlLabel(node.key, rows)}, labeljust=l, style=${q(style)}];`);
  if (node.type === "compound") {
    lines.push(`${pad}  ${q(initialId(node))} [shape=point, width=0.12, label=""];`);
  } else if (anchored.has(node)) {
    lines.push(`${pad}  ${q(anchorId(node))} [shape=point, style=invis, width=0.01, label=""];`);
  }
  for (const child of Object.values(node.states)) emitState(child, `${pad}  `, lines, stay, anchored);
  if (node.type === "compound") {
    for (const target of node.initial.target) {
      lines.push(`${pad}  ${q(initialId(node))} -> ${q(target.id)};`);
    }
  }
  lines.push(`${pad}}`);
}

/** invoke, entry and exit actions, then (below a line) the events handled without leaving the state. */
function detailRows(node: AnyStateNode, staying: string[]): { above: string[]; below: string[] } {
  const above: string[] = [];
  for (const inv of node.invoke) above.push(`invoke ${invokeName(inv.src)}`);
  const entry = node.entry.map(actionName).filter((a): a is string => a !== undefined);
  if (entry.length > 0) above.push(`entry / ${entry.join(", ")}`);
  const exit = node.exit.map(actionName).filter((a): a is string => a !== undefined);
  if (exit.length > 0) above.push(`exit / ${exit.join(", ")}`);
  return { above, below: staying };
}

function htmlLabel(title: string, rows: { above: string[]; below: string[] }): string {
  const cell = (text: string) => `<TR><TD ALIGN="LEFT">${html(text)}</TD></TR>`;
  const parts = [`<TR><TD><B>${html(title)}</B></TD></TR>`, ...rows.above.map(cell)];
  if (rows.below.length > 0) parts.push("<HR/>", ...rows.below.map(cell));
  return `<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">${parts.join("")}</TABLE>>`;
}

function edgeLine(e: Edge): string {
  const { source, target } = e;
  const tail = isCluster(source) ? anchorId(source) : source.id;
  const head = isCluster(target) ? anchorId(target) : target.id;
  const attrs = [`label=${q(e.label)}`];
  // Clip at the cluster border unless one state contains the other (Graphviz cannot clip then).
  if (isCluster(source) && source !== target && !isAncestor(source, target))
    attrs.push(`ltail=${q(`cluster_${source.id}`)}`);
  if (isCluster(target) && source !== target && !isAncestor(target, source))
    attrs.push(`lhead=${q(`cluster_${target.id}`)}`);
  if (e.kind === "always") attrs.push("style=dashed");
  if (e.kind === "error") attrs.push('color="#a33a2c"', 'fontcolor="#a33a2c"');
  return `${q(tail)} -> ${q(head)} [${attrs.join(", ")}];`;
}

function isAncestor(ancestor: AnyStateNode, node: AnyStateNode): boolean {
  for (let p = node.parent; p !== undefined; p = p.parent) if (p === ancestor) return true;
  return false;
}

function q(text: string): string {
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;
}

function html(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
