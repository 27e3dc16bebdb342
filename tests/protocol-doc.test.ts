// docs/protocol.md is the contract: every method, event type and error code the code defines must
// appear in it (as `name` in backticks), so a change to the wire cannot skip the documentation. The
// method tables are checked against the METHODS table: params fields and listed refusals.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { TObject } from "typebox";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "../services/protocol/error-codes.ts";
import { EVENT_TYPES } from "../services/protocol/events.ts";
import { AGENT_METHODS, CLIENT_METHODS, METHODS, type Method } from "../services/protocol/methods.ts";
import { SERVICE_ERROR_STATUS } from "../services/protocol/service-errors.ts";
import { REPO_ROOT } from "./support/processes.ts";

const doc = readFileSync(path.join(REPO_ROOT, "docs/protocol.md"), "utf8");
const documented = new Set([...doc.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]));

/** The rows of the method tables: `| \`method\` | params | result | refusals |`. */
const rows = new Map<string, string[]>();
for (const line of doc.split("\n")) {
  const m = /^\| `([a-z][a-z.]*)` \|/.exec(line);
  if (!m?.[1] || !Object.hasOwn(METHODS, m[1])) continue;
  // Cells split on unescaped pipes; `\|` inside a cell is a literal bar.
  rows.set(
    m[1],
    line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim()),
  );
}

/** Top-level field names of a documented `{a, b?: x\|y, c? (1-500), d: {e, f}}`, with `?` kept. */
function documentedFields(cell: string): string[] {
  const text = cell.replace(/\\\|/g, "|").replace(/`/g, "");
  const open = text.indexOf("{");
  if (open < 0) return [];
  const fields: string[] = [];
  let depth = 0;
  let part = "";
  for (const ch of text.slice(open + 1)) {
    if ("{[(".includes(ch)) depth++;
    if ("}])".includes(ch)) {
      if (depth === 0) break;
      depth--;
    }
    if (ch === "," && depth === 0) {
      fields.push(part);
      part = "";
    } else part += ch;
  }
  fields.push(part);
  return fields.map((f) => /^\s*([A-Za-z_]+\??)/.exec(f)?.[1]).filter((f): f is string => f !== undefined);
}

function schemaFields(method: Method): string[] {
  const schema = METHODS[method].params as TObject;
  const required = new Set(schema.required ?? []);
  return Object.keys(schema.properties).map((k) => (required.has(k) ? k : `${k}?`));
}

describe("docs/protocol.md", () => {
  it.each([
    ["client methods", [...CLIENT_METHODS]],
    ["agent-worker methods", [...AGENT_METHODS]],
    ["event types", [...EVENT_TYPES]],
    ["error codes", Object.values(ErrorCode)],
  ])("documents every %s", (_what, names) => {
    expect(names.filter((n) => !documented.has(n))).toEqual([]);
  });

  it("has a table row for every method of METHODS", () => {
    expect(Object.keys(METHODS).filter((m) => !rows.has(m))).toEqual([]);
  });

  it.each(Object.keys(METHODS) as Method[])("%s: the documented params are the schema's fields", (method) => {
    const cells = rows.get(method) ?? [];
    expect(documentedFields(cells[1] ?? "").sort()).toEqual(schemaFields(method).sort());
  });

  it.each(Object.keys(METHODS) as Method[])(
    "%s: every refusal of the table is listed in its row",
    (method) => {
      const row = (rows.get(method) ?? []).join(" | ");
      const listed = new Set([...row.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]));
      expect(METHODS[method].refusals.filter((code) => !listed.has(code))).toEqual([]);
    },
  );

  it("lists the service error code of every mapped error code", () => {
    for (const [status, codes] of Object.entries(SERVICE_ERROR_STATUS)) {
      const line = doc.split("\n").find((l) => l.startsWith(`| ${status} |`)) ?? "";
      expect(
        codes.filter((code) => !line.includes(`\`${code}\``)),
        `status ${status}`,
      ).toEqual([]);
    }
  });
});
