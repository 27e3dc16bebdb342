// @vitest-environment jsdom
// The machines page: every definition in docs/machines listed, the chosen one drawn and pickable.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeEach, describe, expect, it } from "vitest";
import { createMachinesPage, machineEntries } from "./machines-page-view.ts";

const machinesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../docs/machines");
// What import.meta.glob("../../../docs/machines/*.json", { eager: true, import: "default" }) yields.
const modules = Object.fromEntries(
  readdirSync(machinesDir)
    .filter((f) => f.endsWith(".json"))
    .map((f) => [`../../../docs/machines/${f}`, JSON.parse(readFileSync(path.join(machinesDir, f), "utf8"))]),
);

let els: { list: HTMLElement; heading: HTMLElement; body: HTMLElement };
beforeEach(() => {
  document.body.replaceChildren();
  els = {
    list: document.createElement("ul"),
    heading: document.createElement("h2"),
    body: document.createElement("div"),
  };
  document.body.append(els.list, els.heading, els.body);
});

describe("machines page", () => {
  it("lists every machine JSON by name, module objects or plain values", () => {
    const names = readdirSync(machinesDir)
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.replace(/\.json$/, ""))
      .sort();
    expect(machineEntries(modules).map((m) => m.name)).toEqual(names);
    expect(machineEntries({ "a/x.json": { default: { id: "x" } }, "a/bad.json": "nope" })).toEqual([
      { name: "x", definition: { id: "x" } },
    ]);
  });

  it("shows the chosen machine, marks its link, highlights the picked state and lists transitions", async () => {
    const page = createMachinesPage(els, machineEntries(modules));
    const links = [...els.list.querySelectorAll("a")];
    expect(links.map((a) => a.getAttribute("href"))).toEqual(expect.arrayContaining(["#session", "#turn"]));

    await page.show("turn");
    expect(els.heading.textContent).toBe("turn");
    expect(els.list.querySelector('[aria-current="page"]')?.textContent).toBe("turn");
    expect(els.body.querySelectorAll("svg")).toHaveLength(1);
    expect(els.body.querySelector("svg")?.getAttribute("data-machine")).toBe("turn");

    const picker = els.body.querySelector("select")!;
    expect(els.body.querySelector(`label[for="${picker.id}"]`)?.textContent).toBe("Highlight a state");
    picker.value = "leased";
    picker.dispatchEvent(new Event("change"));
    expect(els.body.querySelector('[aria-current="true"]')?.getAttribute("data-state")).toBe("leased");
    picker.value = "";
    picker.dispatchEvent(new Event("change"));
    expect(els.body.querySelector('[aria-current="true"]')).toBeNull();

    const rows = [...els.body.querySelectorAll("tbody tr")].map((r) =>
      [...r.querySelectorAll("td")].map((td) => td.textContent).join(" | "),
    );
    expect(rows).toContain("offered | TAKE | claiming");

    await page.show("session");
    expect(els.body.querySelectorAll("svg")).toHaveLength(1);
    expect(els.list.querySelectorAll('[aria-current="page"]')).toHaveLength(1);
    expect(els.list.querySelector('[aria-current="page"]')?.textContent).toBe("session");
  });

  it("an unknown name shows the first machine; a later show wins over one still laying out", async () => {
    const page = createMachinesPage(els, machineEntries(modules));
    await page.show("nope");
    expect(els.heading.textContent).toBe(machineEntries(modules)[0]?.name);
    const first = page.show("session");
    const second = page.show("turn");
    await Promise.all([first, second]);
    expect(els.heading.textContent).toBe("turn");
    expect([...els.body.querySelectorAll("svg")].map((s) => s.getAttribute("data-machine"))).toEqual([
      "turn",
    ]);
  });

  it("says so when there is no machine", async () => {
    await createMachinesPage(els, []).show("");
    expect(els.heading.textContent).toBe("No machines");
  });
});
