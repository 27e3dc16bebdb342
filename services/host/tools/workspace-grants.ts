// Which folders a person may open as a project (docs/security.md "Which folders a person may open"):
// the PI_WORKSPACE_ACCESS file, or the default of the mode, as grants; pure (no fs, no env). The
// project store realpaths the folders and checks a request against them (project-store.ts).
import path from "node:path";
import { parseDocument } from "yaml";
import { SUBJECT_TOKEN } from "../../protocol/tokens.ts";
import { type Fail, list, mapping, show, token } from "../../runtime/config-fields.ts";

/** Stands for the caller's principal in a granted folder (`/srv/work/{principal}`). */
export const PRINCIPAL_PLACEHOLDER = "{principal}";

/** One grant: people (and members of teams) may open folders under `folder`. */
export interface WorkspaceGrant {
  /** Absolute and normalised; may hold `{principal}`. */
  folder: string;
  /** `people: ["*"]`: every person. */
  everyone: boolean;
  people: string[];
  teams: string[];
}

export interface WorkspaceAccess {
  /** Where the rules come from, for messages: the file's path or which default. */
  source: string;
  teams: Record<string, string[]>;
  grants: WorkspaceGrant[];
}

/** The root with one trailing separator, so a prefix test compares whole components. */
const asPrefix = (p: string) => (p.endsWith("/") ? p : `${p}/`);

/** Component-wise: `p` is `folder` or lies inside it. */
export function isUnder(p: string, folder: string): boolean {
  return asPrefix(p).startsWith(asPrefix(folder));
}

/** Development mode without a file: every person may open folders under every root (never a root). */
export function openAccess(roots: readonly string[]): WorkspaceAccess {
  return {
    source: "development default (every folder under PI_WORKSPACE_ROOTS)",
    teams: {},
    grants: roots.map((folder) => ({ folder, everyone: true, people: [], teams: [] })),
  };
}

/** Production without a file: each person may open folders under `<root>/<principal>` only. */
export function ownFolderAccess(roots: readonly string[]): WorkspaceAccess {
  return {
    source: "production default (<root>/<principal> for each of PI_WORKSPACE_ROOTS)",
    teams: {},
    grants: roots.map((root) => ({
      folder: path.posix.join(root, PRINCIPAL_PLACEHOLDER),
      everyone: true,
      people: [],
      teams: [],
    })),
  };
}

/**
 * The folders `principal` may open projects under, `{principal}` replaced, each once, in the order
 * granted. A principal that is not one subject token gets none (it could not reach the host anyway).
 * Only ever the caller's own: a refusal may name all of them.
 */
export function foldersFor(access: WorkspaceAccess, principal: string): string[] {
  if (!SUBJECT_TOKEN.test(principal)) return [];
  const out: string[] = [];
  for (const g of access.grants) {
    const granted =
      g.everyone ||
      g.people.includes(principal) ||
      g.teams.some((t) => Object.hasOwn(access.teams, t) && access.teams[t]!.includes(principal));
    if (!granted) continue;
    const folder = g.folder.split(PRINCIPAL_PLACEHOLDER).join(principal);
    if (!out.includes(folder)) out.push(folder);
  }
  return out;
}

/**
 * An absolute folder without `.`/`..` components (so `{principal}` cannot climb out), normalised,
 * whose part before the first component holding `{principal}` lies under (or is) one of `roots`.
 */
function folder(fail: Fail, at: string, v: unknown, roots: readonly string[]): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (typeof v !== "string" || !v.startsWith("/") || /[\u0000-\u001f\u007f]/.test(v))
    fail(at, `expected an absolute folder, got ${show(v)}`);
  const parts = v.split("/");
  if (parts.some((c) => c === "." || c === "..")) fail(at, `${show(v)} has a "." or ".." component`);
  const rest = v.split(PRINCIPAL_PLACEHOLDER).join("");
  if (/[{}]/.test(rest)) fail(at, `${show(v)}: the only placeholder is ${PRINCIPAL_PLACEHOLDER}`);
  const normal = path.posix.normalize(v).replace(/(.)\/+$/, "$1");
  const cut = normal.split("/").findIndex((c) => c.includes(PRINCIPAL_PLACEHOLDER));
  const fixed = cut < 0 ? normal : normal.split("/").slice(0, cut).join("/") || "/";
  if (!roots.some((r) => isUnder(fixed, r)))
    fail(at, `${show(v)} is not under any of PI_WORKSPACE_ROOTS (${roots.join(":")})`);
  return normal;
}

/**
 * Parses a PI_WORKSPACE_ACCESS file (`teams`: name -> people; `grants`: `{folder, people, teams}`).
 * Refuses, naming the key: invalid YAML, an unknown key, a name that is not a subject token, a
 * team named in a grant but not defined, a grant naming nobody, and a folder that is not absolute,
 * climbs with `..`, holds another placeholder, or lies outside every root.
 */
export function parseWorkspaceAccess(
  text: string,
  roots: readonly string[],
  source: string,
): WorkspaceAccess {
  const fail: Fail = (at, message) => {
    throw new Error(`PI_WORKSPACE_ACCESS (${source}): ${at ? `${at}: ` : ""}${message}`);
  };
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) fail("", `not valid YAML: ${yamlError.message}`);
  const top = mapping(fail, "", doc.toJS({ maxAliasCount: 100 }), ["teams", "grants"]);

  // No prototype: a team may be called `constructor` or `__proto__` (both are subject tokens).
  const teams: Record<string, string[]> = Object.create(null);
  const teamMap = mapping(fail, "teams", top.teams ?? {}, null);
  for (const [name, members] of Object.entries(teamMap)) {
    token(fail, `teams.${name}`, name, "team name");
    teams[name] = list(fail, `teams.${name}`, members).map((m, i) =>
      token(fail, `teams.${name}[${i}]`, m, "person name"),
    );
  }

  if (top.grants === undefined) fail("grants", "required (a list of {folder, people, teams})");
  const grants = list(fail, "grants", top.grants).map((v, i): WorkspaceGrant => {
    const at = `grants[${i}]`;
    const g = mapping(fail, at, v, ["folder", "people", "teams"]);
    const f = folder(fail, `${at}.folder`, g.folder, roots);
    let everyone = false;
    const people: string[] = [];
    list(fail, `${at}.people`, g.people).forEach((p, j) => {
      if (p === "*") everyone = true;
      else people.push(token(fail, `${at}.people[${j}]`, p, 'person name (or "*")'));
    });
    const named = list(fail, `${at}.teams`, g.teams).map((t, j) => {
      const name = token(fail, `${at}.teams[${j}]`, t, "team name");
      if (!Object.hasOwn(teams, name)) fail(`${at}.teams[${j}]`, `${show(name)} is not defined under teams`);
      return name;
    });
    if (!everyone && people.length === 0 && named.length === 0)
      fail(at, "names nobody (give people, teams or both)");
    return { folder: f, everyone, people, teams: named };
  });
  return { source, teams, grants };
}
