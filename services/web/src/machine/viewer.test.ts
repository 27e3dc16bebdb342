// @vitest-environment jsdom
// The viewer in a DOM: one box per state, highlight moving aria-current, a layout without overlaps,
// and names from the definition drawn as text only.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { mountMachineViewer } from "./viewer.ts";

const machinesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../docs/machines");
const load = (file: string) =>
  JSON.parse(readFileSync(path.join(machinesDir, file), "utf8")) as Record<string, unknown>;

/** Every state's dotted path, straight from the JSON. */
function statePaths(config: Record<string, unknown>, prefix = ""): string[] {
  const states = (config.states ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(states).flatMap(([key, child]) => {
    const p = prefix === "" ? key : `${prefix}.${key}`;
    return [p, ...statePaths(child, p)];
  });
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

function boxOf(g: Element): Box {
  const r = g.querySelector(":scope > rect.state-box")!;
  const n = (a: string) => Number(r.getAttribute(a));
  return { x: n("x"), y: n("y"), width: n("width"), height: n("height") };
}

const overlap = (a: Box, b: Box) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
const inside = (inner: Box, outer: Box) =>
  inner.x >= outer.x &&
  inner.y >= outer.y &&
  inner.x + inner.width <= outer.x + outer.width &&
  inner.y + inner.height <= outer.y + outer.height;

afterEach(() => {
  document.body.replaceChildren();
});

function container(): HTMLElement {
  const el = document.createElement("div");
  document.body.append(el);
  return el;
}

describe("mountMachineViewer", () => {
  it("draws one element with data-state for every state of session.json, the initial one marked", async () => {
    const def = load("session.json");
    const el = container();
    await mountMachineViewer(el, def);
    const drawn = [...el.querySelectorAll("[data-state]")].map((g) => g.getAttribute("data-state"));
    expect(drawn.sort()).toEqual(statePaths(def).sort());
    expect(new Set(drawn).size).toBe(drawn.length);
    expect([...el.querySelectorAll(".state.initial")].map((g) => g.getAttribute("data-state"))).toEqual([
      "loading",
    ]);
    expect(el.querySelectorAll(".initial-dot")).toHaveLength(1);
    const svg = el.querySelector("svg")!;
    expect(svg.getAttribute("role")).toBe("img");
    expect(svg.getAttribute("viewBox")).toMatch(/^0 0 \d+ \d+$/);
    expect(svg.getAttribute("aria-label")).toBe("session state machine, no current state");
    // Edge labels as the brief names them.
    const labels = [...el.querySelectorAll(".edge-label")].map((t) => t.textContent);
    expect(labels).toEqual(expect.arrayContaining(["PROMPT", "done: loadSession", "after approvalDeadline"]));
    expect(labels.some((l) => l?.startsWith("always"))).toBe(true);
  });

  it("highlight moves aria-current and the label; null and unknown values clear it", async () => {
    const el = container();
    const viewer = await mountMachineViewer(el, load("session.json"), { title: "Session" });
    const svg = el.querySelector("svg")!;
    const marked = () =>
      [...el.querySelectorAll('[aria-current="true"]')].map((g) => g.getAttribute("data-state"));
    const current = () => [...el.querySelectorAll(".current")].map((g) => g.getAttribute("data-state"));

    viewer.highlight("parked");
    expect(marked()).toEqual(["parked"]);
    expect(current()).toEqual(["parked"]);
    expect(svg.getAttribute("aria-label")).toBe("Session state machine, current state parked");

    viewer.highlight("running");
    expect(marked()).toEqual(["running"]);
    expect(current()).toEqual(["running"]);
    expect(svg.getAttribute("aria-label")).toBe("Session state machine, current state running");

    viewer.highlight(null);
    expect(marked()).toEqual([]);
    expect(current()).toEqual([]);
    expect(svg.getAttribute("aria-label")).toBe("Session state machine, no current state");

    viewer.highlight("idle");
    viewer.highlight("passivated");
    expect(marked()).toEqual([]);
    expect(svg.getAttribute("aria-label")).toBe(
      "Session state machine, current state passivated (not drawn)",
    );
  });

  it("lays boxes out without overlaps, nested states inside their parent", async () => {
    const def = {
      id: "nested",
      initial: "a",
      states: {
        a: { on: { GO: "b", DEEP: "b.two.x" } },
        b: {
          initial: "one",
          on: { BACK: "a" },
          states: {
            one: { on: { NEXT: "two" } },
            two: {
              initial: "x",
              states: { x: { on: { Y: "y" } }, y: { type: "final" } },
              onDone: "#nested.a",
            },
            three: { always: "one" },
          },
        },
        c: { type: "final" },
      },
    };
    for (const [name, definition] of [
      ["session.json", load("session.json")],
      ["turn.json", load("turn.json")],
      ["nested", def],
    ] as const) {
      const el = container();
      await mountMachineViewer(el, definition);
      const groups = [...el.querySelectorAll("[data-state]")];
      expect(groups.length, name).toBe(statePaths(definition).length);
      const boxes = new Map(groups.map((g) => [g.getAttribute("data-state")!, boxOf(g)]));
      const parentOf = (p: string) => (p.includes(".") ? p.slice(0, p.lastIndexOf(".")) : null);
      for (const [p, box] of boxes) {
        expect(box.width, p).toBeGreaterThan(0);
        expect(box.height, p).toBeGreaterThan(0);
        const parent = parentOf(p);
        if (parent !== null) expect(inside(box, boxes.get(parent)!), `${p} inside ${parent}`).toBe(true);
        for (const [q, other] of boxes) {
          if (q !== p && parentOf(q) === parent) expect(overlap(box, other), `${p} / ${q}`).toBe(false);
        }
      }
    }
  });

  it("marks a nested state by its dotted path", async () => {
    const el = container();
    const viewer = await mountMachineViewer(el, {
      id: "n",
      initial: "running",
      states: { running: { initial: "waiting", states: { waiting: {}, busy: {} } } },
    });
    viewer.highlight("running.busy");
    expect(el.querySelector('[aria-current="true"]')?.getAttribute("data-state")).toBe("running.busy");
    expect(el.querySelector('[data-state="running.waiting"]')?.classList.contains("initial")).toBe(true);
  });

  it("draws names from the definition as text, never markup, and sets no style attribute", async () => {
    const el = container();
    const hostile = '<img src=x onerror="alert(1)">';
    await mountMachineViewer(el, {
      id: "<script>alert(1)</script>",
      initial: hostile,
      states: { [hostile]: { on: { "<b>GO</b>": "done" } }, done: {} },
    });
    expect(el.querySelector("img")).toBeNull();
    expect(el.querySelector("script")).toBeNull();
    expect(el.querySelector("b")).toBeNull();
    expect([...el.querySelectorAll(".state-name")].map((t) => t.textContent)).toContain(hostile);
    expect([...el.querySelectorAll(".edge-label")].map((t) => t.textContent)).toContain("<b>GO</b>");
    expect(el.querySelector("svg")?.getAttribute("aria-label")).toBe(
      "<script>alert(1)</script> state machine, no current state",
    );
    expect(el.querySelectorAll("[style]")).toHaveLength(0);
  });

  it("two viewers on one page keep their own arrow markers; the zoom button toggles; destroy removes all", async () => {
    const a = container();
    const b = container();
    const va = await mountMachineViewer(a, load("turn.json"));
    const vb = await mountMachineViewer(b, load("session.json"));
    const idA = a.querySelector("marker")!.id;
    const idB = b.querySelector("marker")!.id;
    expect(idA).not.toBe(idB);
    expect(a.querySelector(".edge-line")?.getAttribute("marker-end")).toBe(`url(#${idA})`);
    expect(a.querySelector(".machine-viewer")?.getAttribute("tabindex")).toBe("0");
    const zoom = a.querySelector<HTMLButtonElement>("button.machine-zoom")!;
    expect(zoom.textContent).toBe("Actual size");
    expect(zoom.getAttribute("aria-pressed")).toBe("false");
    zoom.click();
    expect(zoom.getAttribute("aria-pressed")).toBe("true");
    expect(a.querySelector(".machine-viewer")?.classList.contains("actual")).toBe(true);
    va.destroy();
    expect(a.children).toHaveLength(0);
    va.highlight("offered"); // after destroy: nothing to mark, no throw
    vb.highlight("idle");
    expect(b.querySelector('[aria-current="true"]')?.getAttribute("data-state")).toBe("idle");
    vb.destroy();
    expect(document.querySelectorAll("svg")).toHaveLength(0);
  });
});
