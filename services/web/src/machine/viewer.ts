// The machine diagram viewer: lays out an exported XState definition with elkjs and draws it as SVG
// built through DOM APIs (text only through textContent, no style attributes: the CSP forbids them),
// then marks the state the host reports. The graph itself comes from transform.ts.
import ElkBundled from "elkjs/lib/elk.bundled.js";
import type { ELK, ElkEdgeSection, ElkLabel, ElkNode } from "elkjs/lib/elk-api.js";
import "./machine.css";
import { type EdgeInfo, METRICS, type MachineGraph, machineToElk, type StateInfo } from "./transform.ts";

/** The JSON in docs/machines/*.json: an XState machine definition export. */
export type MachineJson = Record<string, unknown>;

const SVG_NS = "http://www.w3.org/2000/svg";

// The bundled build runs layout in-thread (a fake worker): no worker script, nothing for the CSP to allow.
// It is CommonJS and sets `default` on its export, which is what TypeScript's NodeNext view reads.
let elk: ELK | undefined;
let mounted = 0;

/**
 * Draws `definition` into `el` (appended; `destroy()` removes it). `highlight(value)` marks the state
 * whose dotted path is `value` (class `current`, `aria-current="true"`) and unmarks the previous one;
 * `null`, or a value naming no state of this machine (e.g. "passivated"), marks none. Rejects when the
 * layout fails; draws nothing then.
 */
export async function mountMachineViewer(
  el: HTMLElement,
  definition: MachineJson,
  opts?: { title?: string },
): Promise<{ highlight(stateValue: string | null): void; destroy(): void }> {
  const model = machineToElk(definition, { direction: "DOWN" });
  elk ??= new ElkBundled.default();
  const laid = await elk.layout(model.graph);
  const title = opts?.title ?? model.id;
  const uid = `pm-machine-${++mounted}`;
  const { svg, groups } = render(model, laid, uid);
  // A scrollable region must be reachable by keyboard: focusable, named.
  const scroller = h("div", {
    class: "machine-viewer",
    role: "region",
    tabindex: "0",
    "aria-label": `${title} diagram`,
  });
  scroller.append(svg);
  // Fitted to the container by default; "Actual size" draws it 1:1 and scrolls.
  const zoom = h("button", { type: "button", class: "machine-zoom", "aria-pressed": "false" });
  zoom.textContent = "Actual size";
  zoom.addEventListener("click", () => {
    const actual = scroller.classList.toggle("actual");
    zoom.setAttribute("aria-pressed", String(actual));
  });
  const toolbar = h("div", { class: "machine-toolbar" });
  toolbar.append(zoom);
  const wrapper = h("div", { class: "machine-frame" });
  wrapper.append(toolbar, scroller);
  el.append(wrapper);

  let current: Element | undefined;
  const describe = (value: string | null, found: boolean) => {
    const state =
      value === null
        ? "no current state"
        : found
          ? `current state ${value}`
          : `current state ${value} (not drawn)`;
    svg.setAttribute("aria-label", `${title} state machine, ${state}`);
  };
  describe(null, false);
  let destroyed = false;
  return {
    highlight(stateValue) {
      if (destroyed) return;
      if (current !== undefined) {
        current.classList.remove("current");
        current.removeAttribute("aria-current");
        current = undefined;
      }
      const next = stateValue === null ? undefined : groups.get(stateValue);
      if (next !== undefined) {
        next.classList.add("current");
        next.setAttribute("aria-current", "true");
        current = next;
      }
      describe(stateValue, next !== undefined);
    },
    destroy() {
      destroyed = true;
      wrapper.remove();
    },
  };
}

function render(
  model: MachineGraph,
  laid: ElkNode,
  uid: string,
): { svg: SVGSVGElement; groups: Map<string, SVGGElement> } {
  const width = Math.ceil(laid.width ?? 0);
  const height = Math.ceil(laid.height ?? 0);
  const svg = s("svg", {
    role: "img",
    class: width > 640 ? "machine-svg wide" : "machine-svg",
    viewBox: `0 0 ${width} ${height}`,
    width: String(width),
    height: String(height),
    "data-machine": model.id,
  }) as SVGSVGElement;
  const arrow = `${uid}-arrow`;
  const marker = s("marker", {
    id: arrow,
    viewBox: "0 0 10 10",
    refX: "9",
    refY: "5",
    markerWidth: "7",
    markerHeight: "7",
    orient: "auto-start-reverse",
  });
  marker.append(s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }));
  const defs = s("defs", {});
  defs.append(marker);
  svg.append(defs);

  const shapes = new Map<string, ElkNode>();
  const edgesById = new Map<string, { sections: ElkEdgeSection[]; labels: ElkLabel[] }>();
  const collect = (n: ElkNode) => {
    shapes.set(n.id, n);
    for (const e of n.edges ?? [])
      edgesById.set(e.id, { sections: e.sections ?? [], labels: e.labels ?? [] });
    for (const c of n.children ?? []) collect(c);
  };
  collect(laid);

  // States first (parents before children), then edges on top so none hides behind a compound state.
  const states = s("g", { class: "states" });
  const groups = new Map<string, SVGGElement>();
  for (const state of model.states) {
    const box = shapes.get(state.path);
    if (box === undefined) continue;
    const g = stateGroup(state, box);
    groups.set(state.path, g);
    states.append(g);
  }
  for (const p of model.pseudo) {
    const box = shapes.get(p.id);
    if (box === undefined) continue;
    if (p.kind === "initial") {
      const r = (box.width ?? METRICS.initialSize) / 2;
      states.append(
        s("circle", {
          class: "initial-dot",
          cx: String((box.x ?? 0) + r),
          cy: String((box.y ?? 0) + r),
          r: String(r),
        }),
      );
    } else {
      const g = s("g", { class: "any-state" });
      g.append(rect(box, "state-box"), centredText(box, "any state", "state-name"));
      states.append(g);
    }
  }
  svg.append(states);

  const edges = s("g", { class: "edges" });
  for (const e of model.edges) {
    const laidEdge = edgesById.get(e.id);
    if (laidEdge !== undefined) edges.append(edgeGroup(e, laidEdge.sections, laidEdge.labels, arrow));
  }
  svg.append(edges);
  return { svg, groups };
}

function stateGroup(state: StateInfo, box: ElkNode): SVGGElement {
  const classes = ["state", state.kind];
  if (state.initial) classes.push("initial");
  const g = s("g", { class: classes.join(" "), "data-state": state.path }) as SVGGElement;
  const tip = s("title", {});
  tip.textContent = `${state.path}${state.initial ? " (initial)" : ""}${state.kind === "final" ? " (final)" : ""}`;
  g.append(tip);
  // The ring outside the box is what marks the current state besides its colour (hidden otherwise).
  const pad = 4;
  g.append(
    s("rect", {
      class: "current-ring",
      x: String((box.x ?? 0) - pad),
      y: String((box.y ?? 0) - pad),
      width: String((box.width ?? 0) + 2 * pad),
      height: String((box.height ?? 0) + 2 * pad),
      rx: "10",
    }),
  );
  g.append(rect(box, "state-box"));
  if (state.kind === "final") {
    const inset = 3;
    g.append(
      s("rect", {
        class: "final-inner",
        x: String((box.x ?? 0) + inset),
        y: String((box.y ?? 0) + inset),
        width: String(Math.max(0, (box.width ?? 0) - 2 * inset)),
        height: String(Math.max(0, (box.height ?? 0) - 2 * inset)),
        rx: "4",
      }),
    );
  }
  if (state.kind === "compound" || state.kind === "parallel") {
    const t = s("text", {
      class: "state-name compound-name",
      x: String((box.x ?? 0) + METRICS.compoundPad),
      y: String((box.y ?? 0) + METRICS.compoundTop / 2 + METRICS.stateFont / 3),
    });
    t.textContent = state.key;
    g.append(t);
  } else {
    g.append(centredText(box, state.key, "state-name"));
  }
  return g;
}

function edgeGroup(e: EdgeInfo, sections: ElkEdgeSection[], labels: ElkLabel[], arrow: string): SVGGElement {
  const g = s("g", { class: `edge ${e.kind}`, "data-edge": e.id }) as SVGGElement;
  for (const sec of sections) {
    const points = [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint];
    const d = points.map((p, i) => `${i === 0 ? "M" : "L"}${round(p.x)},${round(p.y)}`).join(" ");
    g.append(s("path", { d, class: "edge-line", "marker-end": `url(#${arrow})` }));
  }
  for (const label of labels) {
    const box = { x: label.x ?? 0, y: label.y ?? 0, width: label.width ?? 0, height: label.height ?? 0 };
    g.append(s("rect", { class: "edge-label-bg", ...rectAttrs(box), rx: "2" }));
    const t = s("text", {
      class: "edge-label",
      x: String(round(box.x + box.width / 2)),
      y: String(round(box.y + box.height / 2 + METRICS.edgeFont / 3)),
      "text-anchor": "middle",
    });
    t.textContent = label.text ?? "";
    g.append(t);
  }
  return g;
}

function rect(box: ElkNode, cls: string): SVGElement {
  const b = { x: box.x ?? 0, y: box.y ?? 0, width: box.width ?? 0, height: box.height ?? 0 };
  return s("rect", { class: cls, ...rectAttrs(b), rx: "6" });
}

function rectAttrs(b: { x: number; y: number; width: number; height: number }): Record<string, string> {
  return {
    x: String(round(b.x)),
    y: String(round(b.y)),
    width: String(round(b.width)),
    height: String(round(b.height)),
  };
}

function centredText(box: ElkNode, text: string, cls: string): SVGElement {
  const t = s("text", {
    class: cls,
    x: String(round((box.x ?? 0) + (box.width ?? 0) / 2)),
    y: String(round((box.y ?? 0) + (box.height ?? 0) / 2 + METRICS.stateFont / 3)),
    "text-anchor": "middle",
  });
  t.textContent = text;
  return t;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function s(tag: string, attrs: Record<string, string>): SVGElement {
  const el = document.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function h(tag: string, attrs: Record<string, string>): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}
