// The PI_WORKSPACE_ACCESS parser and foldersFor: the example of docs/operations.md, both defaults,
// and a table of bad files, each refused with a message naming the key.
import { describe, expect, it } from "vitest";
import {
  foldersFor,
  isUnder,
  openAccess,
  ownFolderAccess,
  parseWorkspaceAccess,
} from "./workspace-grants.ts";

const ROOTS = ["/srv/work", "/data/ws"];
const parse = (text: string) => parseWorkspaceAccess(text, ROOTS, "/etc/pihost/access.yaml");

const EXAMPLE = `
teams:
  web: [alice, bob]
grants:
  - folder: /srv/work/{principal}
    people: ["*"]
  - folder: /srv/work/web
    teams: [web]
  - folder: /srv/work/shared
    people: [carol]
`;

describe("foldersFor", () => {
  const access = parse(EXAMPLE);

  it("gives each person their own folder, their teams' and their named grants, nothing else", () => {
    expect(foldersFor(access, "alice")).toEqual(["/srv/work/alice", "/srv/work/web"]);
    expect(foldersFor(access, "bob")).toEqual(["/srv/work/bob", "/srv/work/web"]);
    expect(foldersFor(access, "carol")).toEqual(["/srv/work/carol", "/srv/work/shared"]);
    expect(foldersFor(access, "dave")).toEqual(["/srv/work/dave"]);
  });

  it("gives a name that is not one subject token nothing (no climbing out through {principal})", () => {
    for (const p of ["..", "a/b", "", "*", "x".repeat(65), "al ice"])
      expect(foldersFor(access, p)).toEqual([]);
  });

  it("does not take Object's own keys for teams", () => {
    const a = parse(
      "teams:\n  constructor: [eve]\n  __proto__: [mallory]\ngrants:\n  - folder: /srv/work/x\n    teams: [constructor, __proto__]\n",
    );
    expect(foldersFor(a, "eve")).toEqual(["/srv/work/x"]);
    expect(foldersFor(a, "mallory")).toEqual(["/srv/work/x"]);
    expect(foldersFor(a, "bob")).toEqual([]);
    expect(foldersFor(access, "constructor")).toEqual(["/srv/work/constructor"]);
  });

  it("development default: every root to everyone; production default: <root>/<principal> only", () => {
    expect(foldersFor(openAccess(ROOTS), "bob")).toEqual(ROOTS);
    expect(foldersFor(ownFolderAccess(ROOTS), "bob")).toEqual(["/srv/work/bob", "/data/ws/bob"]);
    expect(foldersFor(ownFolderAccess(ROOTS), "../alice")).toEqual([]);
  });

  it("lists each folder once and keeps a folder that equals a root", () => {
    const a = parse(
      'grants:\n  - folder: /srv/work/\n    people: [bob]\n  - folder: /srv/work\n    people: ["*"]\n',
    );
    expect(foldersFor(a, "bob")).toEqual(["/srv/work"]);
  });

  it("accepts an empty grant list (nobody may open anything) and {principal} inside a component", () => {
    expect(foldersFor(parse("grants: []\n"), "alice")).toEqual([]);
    const a = parse('grants:\n  - folder: /srv/work/u-{principal}/src\n    people: ["*"]\n');
    expect(foldersFor(a, "bob")).toEqual(["/srv/work/u-bob/src"]);
  });
});

describe("isUnder", () => {
  it("compares whole components", () => {
    expect(isUnder("/a/b", "/a/b")).toBe(true);
    expect(isUnder("/a/b/c", "/a/b/")).toBe(true);
    expect(isUnder("/a/bc", "/a/b")).toBe(false);
    expect(isUnder("/a", "/a/b")).toBe(false);
  });
});

describe("a bad PI_WORKSPACE_ACCESS file", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["not YAML", "grants: [\n", /: not valid YAML/],
    ["not a mapping", "- a\n", /expected a mapping with teams, grants/],
    ["an unknown top key", "grants: []\nadmins: [x]\n", /: admins: unknown key/],
    ["no grants", "teams: {}\n", /: grants: required/],
    ["grants not a list", "grants: {a: 1}\n", /: grants: expected a list/],
    [
      "an unknown grant key",
      "grants:\n  - folder: /srv/work/a\n    people: [a]\n    mode: rw\n",
      /grants\[0\]\.mode: unknown key/,
    ],
    [
      "a relative folder",
      "grants:\n  - folder: srv/work\n    people: [a]\n",
      /grants\[0\]\.folder: expected an absolute folder/,
    ],
    ["no folder", "grants:\n  - people: [a]\n", /grants\[0\]\.folder: expected an absolute folder/],
    [
      "a folder outside the roots",
      "grants:\n  - folder: /etc\n    people: [a]\n",
      /grants\[0\]\.folder: "\/etc" is not under any of PI_WORKSPACE_ROOTS/,
    ],
    [
      "a folder beside a root",
      "grants:\n  - folder: /srv/workshop\n    people: [a]\n",
      /grants\[0\]\.folder: .* is not under/,
    ],
    [
      "a parent of a root",
      "grants:\n  - folder: /srv\n    people: [a]\n",
      /grants\[0\]\.folder: .* is not under/,
    ],
    [
      "{principal} climbing out",
      "grants:\n  - folder: /srv/work/{principal}/../..\n    people: [a]\n",
      /grants\[0\]\.folder: .* has a "\." or "\.\." component/,
    ],
    [
      "{principal} in the root's part",
      "grants:\n  - folder: /srv/wo{principal}\n    people: [a]\n",
      /grants\[0\]\.folder: .* is not under/,
    ],
    [
      "another placeholder",
      "grants:\n  - folder: /srv/work/{user}\n    people: [a]\n",
      /grants\[0\]\.folder: .* the only placeholder is \{principal\}/,
    ],
    [
      "a bad person",
      "grants:\n  - folder: /srv/work/a\n    people: [a, b/c]\n",
      /grants\[0\]\.people\[1\]: "b\/c" is not a valid person name/,
    ],
    [
      "an undefined team",
      "teams:\n  web: [a]\ngrants:\n  - folder: /srv/work/a\n    teams: [webb]\n",
      /grants\[0\]\.teams\[0\]: "webb" is not defined under teams/,
    ],
    ["a grant naming nobody", "grants:\n  - folder: /srv/work/a\n", /grants\[0\]: names nobody/],
    [
      "a bad team name",
      "teams:\n  w.eb: [a]\ngrants: []\n",
      /teams\.w\.eb: "w\.eb" is not a valid team name/,
    ],
    [
      "a bad team member",
      "teams:\n  web: [a, '*']\ngrants: []\n",
      /teams\.web\[1\]: "\*" is not a valid person name/,
    ],
    ["teams not a mapping", "teams: [web]\ngrants: []\n", /: teams: expected a mapping/],
    ["a duplicate key", "teams:\n  web: [a]\n  web: [b]\ngrants: []\n", /not valid YAML/],
  ];
  it.each(cases)("%s", (_what, text, message) => {
    expect(() => parse(text)).toThrow(message);
    expect(() => parse(text)).toThrow(/^PI_WORKSPACE_ACCESS \(\/etc\/pihost\/access\.yaml\): /);
  });
});
