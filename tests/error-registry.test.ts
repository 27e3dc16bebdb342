// Keeps docs/errors.md and the error-code registry equal: every code, no extra, same retriable flag.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ErrorCode, errorCodeInfo } from "../services/protocol/error-codes.ts";

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../docs/errors.md");

interface DocRow {
  code: string;
  retriable: boolean;
  meaning: string;
}

/** Reads the `| Code | Retriable | Meaning |` table; any malformed row is an error, not skipped. */
function parseErrorTable(markdown: string): DocRow[] {
  const lines = markdown.split(/\r?\n/);
  const header = lines.findIndex((l) => /^\|\s*Code\s*\|\s*Retriable\s*\|\s*Meaning\s*\|\s*$/.test(l));
  if (header < 0) throw new Error("docs/errors.md has no | Code | Retriable | Meaning | table");
  const separator = lines[header + 1] ?? "";
  if (!/^\|(\s*:?-+:?\s*\|){3}\s*$/.test(separator))
    throw new Error("table header is not followed by a separator");
  const out: DocRow[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith("|")) break;
    const cells = line
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((c) => c.trim());
    const [codeCell = "", retriableCell = "", meaning = ""] = cells;
    const code = /^`([A-Z][A-Z0-9_]*)`$/.exec(codeCell)?.[1];
    if (cells.length !== 3 || !code || !/^(yes|no)$/.test(retriableCell) || meaning === "") {
      throw new Error(`malformed row in docs/errors.md: ${line}`);
    }
    out.push({ code, retriable: retriableCell === "yes", meaning });
  }
  return out;
}

describe("docs/errors.md", () => {
  const rows = parseErrorTable(readFileSync(DOC, "utf8"));

  it("lists each code once", () => {
    const codes = rows.map((r) => r.code);
    expect(codes.filter((c, i) => codes.indexOf(c) !== i)).toEqual([]);
  });

  it("lists every code of the registry", () => {
    const documented = new Set(rows.map((r) => r.code));
    expect(Object.keys(errorCodeInfo).filter((c) => !documented.has(c))).toEqual([]);
  });

  it("lists no code the registry lacks", () => {
    expect(rows.map((r) => r.code).filter((c) => !Object.hasOwn(errorCodeInfo, c))).toEqual([]);
  });

  it("gives every code the registry's retriable flag", () => {
    const documented = Object.fromEntries(rows.map((r) => [r.code, r.retriable]));
    const registered = Object.fromEntries(
      Object.entries(errorCodeInfo).map(([code, i]) => [code, i.retriable]),
    );
    expect(documented).toEqual(registered);
  });

  it("the registry itself is consistent: each constant names itself and has an entry", () => {
    for (const [key, value] of Object.entries(ErrorCode)) expect(value).toBe(key);
    expect(Object.keys(errorCodeInfo).sort()).toEqual(Object.values(ErrorCode).sort());
  });
});

describe("parseErrorTable", () => {
  const head = "| Code | Retriable | Meaning |\n| --- | --- | --- |\n";

  it("refuses a row it cannot read instead of skipping it", () => {
    expect(() => parseErrorTable(`${head}| \`A_CODE\` | maybe | Something. |\n`)).toThrow(/malformed row/);
    expect(() => parseErrorTable(`${head}| A_CODE | no | Something. |\n`)).toThrow(/malformed row/);
    expect(() => parseErrorTable("no table here")).toThrow(/no \| Code/);
  });

  it("reads code, flag and meaning", () => {
    expect(parseErrorTable(`${head}| \`A_CODE\` | yes | Something. |\n\nAfter.`)).toEqual([
      { code: "A_CODE", retriable: true, meaning: "Something." },
    ]);
  });
});
