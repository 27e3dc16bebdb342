/// <reference types="vite/client" />
// Entry of machines.html: every machine definition in docs/machines, drawn by the console's viewer;
// `#<name>` picks one (shareable; back and forward work). The page itself is machine/machines-page-view.ts.
import { createMachinesPage, machineEntries } from "./machine/machines-page-view.ts";

const modules = import.meta.glob("../../../docs/machines/*.json", { eager: true, import: "default" });

const list = document.getElementById("machine-list");
const heading = document.getElementById("machine-heading");
const body = document.getElementById("machine-body");
if (list === null || heading === null || body === null)
  throw new Error("machines.html is missing its containers");

const page = createMachinesPage({ list, heading, body }, machineEntries(modules));
const fromHash = () => decodeURIComponent(window.location.hash.slice(1));
const show = () => {
  page.show(fromHash()).catch((err: unknown) => {
    heading.textContent = "The diagram could not be drawn";
    body.replaceChildren();
    const p = document.createElement("p");
    p.setAttribute("role", "alert");
    p.textContent = err instanceof Error ? err.message : String(err);
    body.append(p);
  });
};
window.addEventListener("hashchange", show);
show();
