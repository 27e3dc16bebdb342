// Which folders a person may open as a project (issue #11 clause 5; docs/security.md "Which folders a
// person may open"), as the attack against the real host with a PI_WORKSPACE_ACCESS file: everyone
// their own folder, team web (alice, bob) its folder, carol the shared one. bob cannot open alice's
// folder, the root itself, or alice's folder through a symlink in his own; a refusal names only his
// folders and changes nothing (no row, no audit row, no ACL). A bad file stops the host at start.
// The production default (each person `<root>/<principal>` only) is checked through readHostConfig
// and the store, since a production host needs NATS credentials.
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { readHostConfig } from "../services/host/host-config.ts";
import { createDb } from "../services/host/store/db.ts";
import { createProjectStore } from "../services/host/store/project-store.ts";
import { foldersFor } from "../services/host/tools/workspace-grants.ts";
import { AppError } from "../services/protocol/app-error.ts";
import { hostEnv, spawnTs } from "./support/processes.ts";
import type { Stack } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { unwrap } from "../services/protocol/result.ts";

const accessFile = (dir: string) => `teams:
  web: [alice, bob]
grants:
  - folder: ${dir}/{principal}
    people: ["*"]
  - folder: ${dir}/web
    teams: [web]
  - folder: ${dir}/shared
    people: [carol]
`;

function prepare(stack: Stack): void {
  for (const f of ["alice", "bob", "carol", "web", "shared", "alice/secret-project"])
    mkdirSync(path.join(stack.dir, f), { recursive: true });
  // bob's own folder holds links into alice's: the host must judge where they lead.
  symlinkSync(path.join(stack.dir, "alice"), path.join(stack.dir, "bob", "to-alice"));
  symlinkSync(path.join(stack.dir, "alice", "secret-project"), path.join(stack.dir, "bob", "deep"));
  symlinkSync(stack.dir, path.join(stack.dir, "bob", "to-root"));
  const file = path.join(stack.dir, "access.yaml");
  writeFileSync(file, accessFile(stack.dir));
  stack.env.extra = { ...stack.env.extra, PI_WORKSPACE_ACCESS: file };
}

const stack = useStack("wsgrants", { prepare, host: true });

const at = (...parts: string[]) => path.join(stack.dir, ...parts);
const create = (principal: string, root: string) =>
  stack.client(principal).call("projects.create", { name: path.basename(root), workspaceRoot: root });

/** The refusal of a create that must not succeed. */
const refused = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the create succeeded");
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(AppError);
      return e as AppError;
    },
  );

/** ACLs of the paths, symlinks not followed. */
const acl = (...paths: string[]) =>
  execFileSync("getfacl", ["-P", "-p", "--", ...paths], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });

async function rows() {
  const q = (sql: string) => stack.db.pool.query(sql).then((r) => r.rows);
  return {
    projects: await q("SELECT id, owner, workspace_root FROM projects ORDER BY id"),
    members: await q("SELECT project_id, principal FROM project_members ORDER BY project_id, principal"),
    audit: await q("SELECT id, action, principal FROM audit_log ORDER BY id"),
  };
}

describe("which folders a person may open", () => {
  it("bob cannot open alice's folder, the root, or alice's folder through a symlink in his own; nothing changes", async () => {
    // alice has a project in her folder: bob's refusal must not say so (no PROJECT_ROOT_OVERLAPS).
    const hers = await create("alice", at("alice", "secret-project"));
    expect(hers.owner).toBe("alice");
    const before = await rows();
    const aclBefore = acl(stack.dir, at("alice"), at("alice", "secret-project"));

    const attempts = [
      at("alice"),
      at("alice", "secret-project"),
      `${at("bob")}/../alice`,
      at("bob", "to-alice"),
      at("bob", "deep"),
      at("alice", "no-such-folder"),
      at("carol"),
      at("shared"),
      "/etc",
    ];
    for (const root of attempts) {
      const err = await refused(create("bob", root));
      expect(err.code, root).toBe("WORKSPACE_NOT_ALLOWED");
      // Only bob's folders are named: his own and his team's, never carol's or alice's.
      expect(err.details, root).toEqual({ mayOpen: [at("bob"), at("web")] });
      // The same words whether it exists, is alice's project or is a link: nothing about it leaks.
      expect(err.message, root).toBe(
        `${path.resolve(root)} is not an existing directory in a folder you may open; you may open folders under ${at("bob")}, ${at("web")}`,
      );
    }

    for (const root of [stack.dir, at("bob", "to-root"), `${stack.dir}/`]) {
      const err = await refused(create("bob", root));
      expect(err.code, root).toBe("WORKSPACE_NOT_ALLOWED");
      expect(err.message, root).toMatch(/is a configured workspace root .*which holds everyone's folders/);
    }

    expect(await rows()).toEqual(before);
    expect(acl(stack.dir, at("alice"), at("alice", "secret-project"))).toBe(aclBefore);
  });

  it("bob opens his own folder and folders in it; a granted folder itself may be a project root", async () => {
    mkdirSync(at("bob", "app"));
    const p = await create("bob", at("bob", "app"));
    expect(p).toMatchObject({ owner: "bob", workspaceRoot: at("bob", "app") });
    const carols = await create("carol", at("carol"));
    expect(carols.workspaceRoot).toBe(at("carol"));
  });

  it("a team member opens the team folder, a non-member cannot", async () => {
    for (const f of ["site", "api", "carols"]) mkdirSync(at("web", f));
    expect((await create("alice", at("web", "site"))).owner).toBe("alice");
    expect((await create("bob", at("web", "api"))).owner).toBe("bob");
    const before = await rows();
    for (const root of [at("web", "carols"), at("web")]) {
      const err = await refused(create("carol", root));
      expect(err.code, root).toBe("WORKSPACE_NOT_ALLOWED");
      expect(err.details, root).toEqual({ mayOpen: [at("carol"), at("shared")] });
    }
    expect(await rows()).toEqual(before);
  });

  it("carol's grant works: she opens the shared folder itself; alice cannot", async () => {
    const err = await refused(create("alice", at("shared")));
    expect(err.code).toBe("WORKSPACE_NOT_ALLOWED");
    const p = await create("carol", at("shared"));
    expect(p).toMatchObject({ owner: "carol", workspaceRoot: at("shared") });
  });

  it("a person whose granted folder is missing, or leads out of the roots, may open nothing and is told so", async () => {
    mkdirSync(at("daves-guess"));
    const err = await refused(create("dave", at("daves-guess")));
    expect(err.code).toBe("WORKSPACE_NOT_ALLOWED");
    expect(err.details).toEqual({ mayOpen: [], unusable: [at("dave")] });
    expect(err.message).toContain(
      `you may open no folder (granted but missing or outside PI_WORKSPACE_ROOTS: ${at("dave")})`,
    );
    // A link in dave's folder's place that leads to /etc grants nothing either.
    symlinkSync("/etc", at("dave"));
    for (const root of [at("dave"), "/etc"]) {
      const viaLink = await refused(create("dave", root));
      expect(viaLink.code, root).toBe("WORKSPACE_NOT_ALLOWED");
      expect(viaLink.details, root).toEqual({ mayOpen: [], unusable: [at("dave")] });
    }
  });

  it("a bad access file stops the host at start with a message naming the key", async () => {
    const cases: Array<[string, string | null, RegExp]> = [
      [
        "bad-team.yaml",
        accessFile(stack.dir).replace("teams: [web]", "teams: [webb]"),
        /grants\[1\]\.teams\[0\]: "webb" is not defined under teams/,
      ],
      [
        "outside.yaml",
        'grants:\n  - folder: /etc\n    people: ["*"]\n',
        /grants\[0\]\.folder: "\/etc" is not under any of PI_WORKSPACE_ROOTS/,
      ],
      ["unknown.yaml", "grants: []\nadmins: [alice]\n", /admins: unknown key/],
      ["missing.yaml", null, /PI_WORKSPACE_ACCESS \(.*missing\.yaml\) cannot be read: ENOENT/],
    ];
    for (const [name, text, message] of cases) {
      const file = at(name);
      if (text !== null) writeFileSync(file, text);
      const p = spawnTs("services/host/main.ts", { ...hostEnv(stack.env), PI_WORKSPACE_ACCESS: file });
      expect(await p.exited, name).not.toBe(0);
      const failed = await p.waitForEvent("host.failed", 1_000);
      expect(failed.error, name).toMatch(message);
      expect(p.lines.join("\n"), name).not.toMatch(/host\.ready/);
    }
  });
});

describe("without PI_WORKSPACE_ACCESS", () => {
  const prod = (extra: Record<string, string> = {}) =>
    readHostConfig({ NATS_USER: "host", NATS_PASSWORD: "x", PI_WORKSPACE_ROOTS: "/srv/a:/srv/b", ...extra });

  it("production: each person their own folder under each root and nothing else; development: every root", () => {
    expect(foldersFor(prod().workspaceAccess, "bob")).toEqual(["/srv/a/bob", "/srv/b/bob"]);
    const dev = readHostConfig({ PI_DEV_MODE: "1", PI_WORKSPACE_ROOTS: "/srv/a:/srv/b" });
    expect(foldersFor(dev.workspaceAccess, "bob")).toEqual(["/srv/a", "/srv/b"]);
    // An empty value is unset, never "no rules".
    expect(foldersFor(prod({ PI_WORKSPACE_ACCESS: "" }).workspaceAccess, "bob")).toEqual([
      "/srv/a/bob",
      "/srv/b/bob",
    ]);
  });

  it("production default in the store: bob opens <root>/bob, not alice's folder, not the root", async () => {
    const { workspaceAccess } = readHostConfig({
      NATS_USER: "host",
      NATS_PASSWORD: "x",
      PI_WORKSPACE_ROOTS: stack.dir,
    });
    const db = createDb(stack.db.url, { max: 2 });
    try {
      const store = createProjectStore({
        db,
        clock: createClock(),
        workspaceRoots: [stack.dir],
        workspaceAccess,
      });
      mkdirSync(at("bob", "prod"));
      expect(unwrap(await store.create("bob", "p", at("bob", "prod"))).workspaceRoot).toBe(at("bob", "prod"));
      for (const root of [at("alice"), at("bob", "to-alice"), stack.dir, at("web"), at("shared")]) {
        const err = await refused(store.create("bob", "x", root).then(unwrap));
        expect(err.code, root).toBe("WORKSPACE_NOT_ALLOWED");
        expect(err.details, root).toEqual({ mayOpen: [at("bob")] });
      }
    } finally {
      await db.end();
    }
  });
});
