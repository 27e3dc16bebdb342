// The machines page's content: a list of every exported machine and the chosen one drawn by the same
// viewer as the console, with a state picker and the transitions as a table (the SVG is one image to
// assistive technology). The entry (src/machines-page.ts) finds the definitions and wires the URL.
import "./machines-page.css";
import { machineToElk } from "./transform.ts";
import { type MachineJson, mountMachineViewer } from "./viewer.ts";

export interface MachineEntry {
  /** The file's name without `.json` (`session`): what `#<name>` selects. */
  name: string;
  definition: MachineJson;
}

/** Entries from `import.meta.glob` results (path → parsed JSON), by name; anything not an object is skipped. */
export function machineEntries(modules: Record<string, unknown>): MachineEntry[] {
  const out: MachineEntry[] = [];
  for (const [file, mod] of Object.entries(modules)) {
    const value = isRecord(mod) && isRecord(mod.default) ? mod.default : mod;
    if (!isRecord(value)) continue;
    const name = (file.split("/").pop() ?? file).replace(/\.json$/, "");
    out.push({ name, definition: value });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export interface MachinesPageElements {
  list: HTMLElement;
  heading: HTMLElement;
  body: HTMLElement;
}

/**
 * Fills `list` with one link per machine (`#<name>`) and returns `show(name)`, which draws that machine
 * (an unknown or empty name shows the first) and marks its link `aria-current="page"`. A later call wins
 * over one still laying out.
 */
export function createMachinesPage(
  els: MachinesPageElements,
  machines: MachineEntry[],
): { show(name: string): Promise<void> } {
  const links = new Map<string, HTMLAnchorElement>();
  els.list.replaceChildren();
  for (const m of machines) {
    const a = el("a", { href: `#${encodeURIComponent(m.name)}` }, m.name) as HTMLAnchorElement;
    links.set(m.name, a);
    const li = el("li", {});
    li.append(a);
    els.list.append(li);
  }
  let viewer: { destroy(): void } | undefined;
  let token = 0;

  return {
    async show(name) {
      const mine = ++token;
      const entry = machines.find((m) => m.name === name) ?? machines[0];
      for (const [n, a] of links) {
        if (n === entry?.name) a.setAttribute("aria-current", "page");
        else a.removeAttribute("aria-current");
      }
      viewer?.destroy();
      viewer = undefined;
      els.body.replaceChildren();
      if (entry === undefined) {
        els.heading.textContent = "No machines";
        els.body.append(el("p", {}, "docs/machines holds no machine definitions."));
        return;
      }
      els.heading.textContent = entry.name;
      const model = machineToElk(entry.definition);

      const pickId = `machine-pick-${mine}`;
      const picker = el("select", { id: pickId }) as HTMLSelectElement;
      picker.append(el("option", { value: "" }, "(none)"));
      for (const s of model.states) picker.append(el("option", { value: s.path }, s.path));
      const controls = el("div", { class: "machine-controls" });
      controls.append(el("label", { for: pickId }, "Highlight a state"), picker);

      const diagram = el("div", { class: "machine-diagram" });
      els.body.append(controls, diagram, transitionsTable(entry.name, model));
      const mounted = await mountMachineViewer(diagram, entry.definition, { title: entry.name });
      if (mine !== token) {
        mounted.destroy();
        return;
      }
      viewer = mounted;
      picker.addEventListener("change", () => mounted.highlight(picker.value === "" ? null : picker.value));
    },
  };
}

function transitionsTable(name: string, model: ReturnType<typeof machineToElk>): HTMLElement {
  const details = el("details", { class: "machine-transitions" });
  details.append(el("summary", {}, `Transitions of ${name} as text`));
  const table = el("table", {});
  const head = el("tr", {});
  for (const h of ["From", "Event", "To"]) head.append(el("th", { scope: "col" }, h));
  const thead = el("thead", {});
  thead.append(head);
  const tbody = el("tbody", {});
  const initial = model.states.filter((s) => s.initial && s.parent === null).map((s) => s.path);
  for (const e of model.edges) {
    if (e.kind === "initial") continue;
    const row = el("tr", {});
    row.append(
      el("td", {}, e.source === "__any" ? "(any state)" : e.source),
      el("td", {}, e.label),
      el("td", {}, e.target),
    );
    tbody.append(row);
  }
  table.append(thead, tbody);
  const facts = el(
    "p",
    {},
    `Initial state: ${initial.join(", ") || "(none)"}. ${model.states.length} states.`,
  );
  details.append(facts, table);
  if (model.unresolved.length > 0) {
    details.append(
      el(
        "p",
        { class: "machine-unresolved" },
        `Not drawn (target names no state): ${model.unresolved.map((u) => `${u.source} ${u.label} → ${u.target}`).join("; ")}`,
      ),
    );
  }
  return details;
}

function el(tag: string, attrs: Record<string, string>, text?: string): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
