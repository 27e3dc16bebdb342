// Project tool settings (docs/architecture.md "Tools", "Scheduled tasks and settings"; docs/protocol.md "Projects") over NATS against the real host:
// projects.get and projects.configure with canonical preview origins, version and audit; a stale
// expectedVersion, malformed origins and unknown projects refused with nothing changed; and, with the
// real project store on the same database outside development mode, only PI_SETTINGS_ADMINS may
// change them. Whether the sandbox and BrowserPreview honour them: sandbox-network.test.ts and
// slow/browser-preview.test.ts.
import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createProjectStore } from "../services/host/store/project-store.ts";
import { createProjectsApi } from "../services/host/bus/projects-api.ts";
import { createGate } from "../services/host/bus/gates.ts";
import { METHODS } from "../services/protocol/methods.ts";
import { ok, unwrap } from "../services/protocol/result.ts";
import type { ProjectView } from "../services/protocol/project-schemas.ts";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("projectsettings", { host: true });

async function newProject(name = "p"): Promise<ProjectView> {
  return stack.client("alice").call("projects.create", {
    name,
    workspaceRoot: stack.newWorkspace(`${name}-${Math.random().toString(36).slice(2, 8)}`),
  });
}

async function auditOf(projectId: string) {
  const r = await stack.db.pool.query(
    "SELECT principal, action, details FROM audit_log WHERE details->>'projectId' = $1 ORDER BY id",
    [projectId],
  );
  return r.rows;
}

describe("project settings", () => {
  it("a new project has no network and no preview origins; projects.get reads it", async () => {
    const p = await newProject();
    expect(p).toMatchObject({
      owner: "alice",
      network: false,
      previewOrigins: [],
      version: 0,
      updatedAt: null,
    });
    // Only members read a project: bob, once alice adds him.
    expect(await refusalCode(stack.client("bob").call("projects.get", { projectId: p.id }))).toBe(
      "FORBIDDEN",
    );
    await addMembers(stack, p.id, ["bob"]);
    expect(await stack.client("bob").call("projects.get", { projectId: p.id })).toEqual(p);
  });

  it("configure stores canonical origins, bumps the version once per change and audits what changed", async () => {
    const p = await newProject();
    const rpc = stack.client("alice");
    const v1 = await rpc.call("projects.configure", {
      projectId: p.id,
      network: true,
      previewOrigins: ["HTTPS://Docs.Example.COM:443/", "http://10.1.2.3:8080", "https://docs.example.com"],
    });
    expect(v1).toMatchObject({
      network: true,
      previewOrigins: ["https://docs.example.com", "http://10.1.2.3:8080"],
      version: 1,
    });
    expect(v1.updatedAt).not.toBeNull();
    // The same settings again change nothing: no version, no audit row.
    const same = await rpc.call("projects.configure", {
      projectId: p.id,
      network: true,
      previewOrigins: ["https://docs.example.com/", "http://10.1.2.3:8080"],
    });
    expect(same).toEqual(v1);
    const v2 = await rpc.call("projects.configure", {
      projectId: p.id,
      network: false,
      expectedVersion: 1,
    });
    expect(v2).toMatchObject({ network: false, previewOrigins: v1.previewOrigins, version: 2 });
    expect(await auditOf(p.id)).toEqual([
      expect.objectContaining({ action: "project.create", principal: "alice" }),
      {
        principal: "alice",
        action: "project.configure",
        details: {
          projectId: p.id,
          version: 1,
          changes: {
            network: { from: false, to: true },
            previewOrigins: { from: [], to: ["https://docs.example.com", "http://10.1.2.3:8080"] },
          },
        },
      },
      {
        principal: "alice",
        action: "project.configure",
        details: { projectId: p.id, version: 2, changes: { network: { from: true, to: false } } },
      },
    ]);
  });

  it("refuses stale versions, malformed origins and unknown projects, changing nothing", async () => {
    const p = await newProject();
    const rpc = stack.client("alice");
    const configure = (body: Record<string, unknown>) =>
      rpc.call("projects.configure", { projectId: p.id, ...body });
    expect(await refusalCode(configure({ network: true, expectedVersion: 3 }))).toBe(
      "PROJECT_VERSION_CONFLICT",
    );
    const bad: unknown[] = [
      ["ftp://files.example.com"],
      ["https://example.com/path"],
      ["https://example.com/?q=1"],
      ["https://example.com#top"],
      ["https://user:pw@example.com"],
      ["not a url"],
      ["file:///etc/passwd"],
      ["javascript:alert(1)"],
      Array.from({ length: 33 }, (_, i) => `https://h${i}.example.com`),
      "https://example.com",
      [42],
    ];
    for (const previewOrigins of bad)
      expect({ previewOrigins, code: await refusalCode(configure({ previewOrigins })) }).toEqual({
        previewOrigins,
        code: "INVALID_PARAMS",
      });
    expect(await refusalCode(configure({ network: "yes" }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(configure({ unknown: true }))).toBe("INVALID_PARAMS");
    expect(
      await refusalCode(rpc.call("projects.configure", { projectId: "prj_missing", network: true })),
    ).toBe("PROJECT_NOT_FOUND");
    expect(await refusalCode(rpc.call("projects.get", { projectId: "prj_missing" }))).toBe(
      "PROJECT_NOT_FOUND",
    );
    expect(await rpc.call("projects.get", { projectId: p.id })).toEqual(p);
    expect((await auditOf(p.id)).map((r) => r.action)).toEqual(["project.create"]);
  });

  it("outside development mode only PI_SETTINGS_ADMINS may change a project's settings", async () => {
    const p = await newProject();
    const api = createProjectsApi({
      store: createProjectStore({
        db: stack.db.pool,
        clock: createClock(),
        workspaceRoots: stack.env.workspaceRoots,
      }),
      devMode: false,
      settingsAdmins: ["root-admin"],
    });
    // The bus checks the method's gate (`admin`) before the handler runs (gates.ts).
    const gate = createGate({ sessions: null as never, devMode: false, settingsAdmins: ["root-admin"] });
    const configure = { projectId: p.id, network: true };
    const spec = METHODS["projects.configure"];
    expect(await gate(spec, "alice", configure, {})).toMatchObject({
      ok: false,
      refusal: { code: "FORBIDDEN" },
    });
    expect(unwrap(await api["projects.get"]("alice", { projectId: p.id }, {}))).toEqual(p);
    expect(await gate(spec, "root-admin", configure, {})).toEqual(ok({}));
    const done = unwrap(await api["projects.configure"]("root-admin", configure, {}));
    expect(done).toMatchObject({ network: true, version: 1 });
    expect((await auditOf(p.id)).at(-1)).toMatchObject({
      principal: "root-admin",
      action: "project.configure",
    });
  });
});
