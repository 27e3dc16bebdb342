// `.pi/plan` is the host's (issue 10 clause 4, docs/operations.md "The plan folder"), through the real
// host with the test as the worker: with a pending plan, every way Bash tries to move, remove, chmod,
// link or forge `.pi` fails inside the sandbox, the pending file keeps its path and hash, and a new
// session still submits; a workspace's default ACL never reaches `.pi`; a `.pi` tampered with outside
// pi-host refuses submissions and Bash with the reason, and nothing is repaired; a person's `.pi` and
// a repository tracking `.pi/settings.json` keep working (the agent cannot change that file).
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ProposalView, ToolExecuteResult, TurnAssignment } from "../services/protocol/schemas.ts";
import { readArtifact as readAllPages } from "./support/artifacts.ts";
import { approvalRow } from "./support/plans.ts";
import { openStackDir, SANDBOX_USER, sandboxIds, sandboxWorkspace } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim, refusalCode } from "./support/worker-double.ts";

const stack = useStack("plandirsealed", { prepare: openStackDir, host: true });

interface Project {
  ws: string;
  id: string;
}

let n = 0;
async function newProject(prepare?: (ws: string) => void): Promise<Project> {
  const ws = sandboxWorkspace(stack, `ws-sealed-${++n}`);
  prepare?.(ws);
  const p = await stack.client("alice").call("projects.create", { name: `p${n}`, workspaceRoot: ws });
  return { ws, id: p.id };
}

async function turn(p: Project, mode: "plan" | "agent"): Promise<TurnAssignment> {
  const session = await stack
    .client("alice")
    .call("session.create", { projectId: p.id, mode, permissionMode: "auto" });
  return promptAndClaim(stack, session.id);
}

function bash(a: TurnAssignment, command: string): Promise<ToolExecuteResult> {
  return executeTool(stack, a, `bash-${++n}`, "Bash", { command });
}

/** ExitPlanMode in a new Plan session of the project. */
async function submit(p: Project, title = `Plan ${++n}`): Promise<ToolExecuteResult> {
  const a = await turn(p, "plan");
  return executeTool(stack, a, `exit-${++n}`, "ExitPlanMode", {
    title,
    markdown: `# ${title}\n\n1. Keep the file.\n`,
    question: "Go?",
  });
}

async function pendingProposal(p: Project): Promise<ProposalView> {
  const r = await submit(p);
  expect(r).toMatchObject({ isError: false, terminate: true });
  const { proposals } = await stack.client("alice").call("plans.pending", {});
  const mine = proposals.filter((x) => existsSync(path.join(p.ws, x.artifactPath)));
  expect(mine).toHaveLength(1);
  return mine[0]!;
}

function readArtifact(proposalId: string) {
  return readAllPages(stack.client("alice"), proposalId);
}

const acl = (p: string) =>
  execFileSync("getfacl", ["--numeric", "--absolute-names", "--omit-header", "--skip-base", p], {
    encoding: "utf8",
  }).trim();

/** `.pi` and `.pi/plan` as the host made them: real folders, the host's, 0755, no ACL entry. */
function expectSealed(ws: string) {
  for (const rel of [".pi", ".pi/plan"]) {
    const st = lstatSync(path.join(ws, rel));
    expect(st.isDirectory(), rel).toBe(true);
    expect({ rel, uid: st.uid, mode: st.mode & 0o7777 }).toEqual({ rel, uid: 0, mode: 0o755 });
    expect(acl(path.join(ws, rel)), rel).toBe("");
  }
}

const ATTACKS: Array<[string, (name: string) => string]> = [
  ["mv .pi .pi-moved", () => "mv .pi .pi-moved"],
  ["rm -rf .pi", () => "rm -rf .pi"],
  ["chmod 777 .pi", () => "chmod 777 .pi"],
  ["chmod 777 .pi/plan", () => "chmod 777 .pi/plan"],
  ["ln -s /etc .pi/plan/x", () => "ln -s /etc .pi/plan/x"],
  [
    "mv .pi .pi-moved && mkdir -p .pi/plan && echo forged > .pi/plan/<name>",
    (name) => `mv .pi .pi-moved && mkdir -p .pi/plan && echo forged > .pi/plan/${name}`,
  ],
  ["ln -sfn /etc .pi/plan", () => "ln -sfn /etc .pi/plan"],
];

describe("Bash against the plan folder, with a pending plan", () => {
  for (const [label, command] of ATTACKS) {
    it(`\`${label}\` fails inside the sandbox; the plan keeps its path and hash; a new session submits`, async () => {
      const p = await newProject();
      const proposal = await pendingProposal(p);
      const file = path.join(p.ws, proposal.artifactPath);
      const before = readFileSync(file);

      const r = await bash(await turn(p, "agent"), command(path.basename(proposal.artifactPath)));
      // The command ran in the sandbox and failed there (not a sandbox that would not start).
      expect(r).toMatchObject({ isError: true, code: "TOOL_FAILED" });
      expect(String(r.details?.stderr)).toMatch(/Read-only file system|Device or resource busy/);

      expect(existsSync(path.join(p.ws, ".pi-moved"))).toBe(false);
      expect(readdirSync(path.join(p.ws, ".pi/plan"))).toEqual([path.basename(proposal.artifactPath)]);
      expect(readFileSync(file).equals(before)).toBe(true);
      expectSealed(p.ws);
      const read = await readArtifact(proposal.proposalId);
      expect(read).toMatchObject({
        path: proposal.artifactPath,
        sha256: proposal.sha256,
        matchesRecord: true,
      });

      const next = await submit(p);
      expect(next).toMatchObject({ isError: false, terminate: true });
      expect(readdirSync(path.join(p.ws, ".pi/plan"))).toHaveLength(2);
    });
  }
});

describe("folders the host creates", () => {
  it("under a workspace with a default ACL for the sandbox user, .pi and .pi/plan carry no ACL entry", async () => {
    const p = await newProject((ws) => {
      execFileSync("setfacl", ["-d", "-m", `u:${SANDBOX_USER}:rwx,g::rwx,o::rwx`, ws]);
    });
    const proposal = await pendingProposal(p);
    expectSealed(p.ws);
    const file = path.join(p.ws, proposal.artifactPath);
    expect(lstatSync(file).mode & 0o7777).toBe(0o444);
    expect(acl(file)).toBe("");
    // The workspace's own default ACL is the operator's and stays.
    expect(acl(p.ws)).toContain(`default:user:${sandboxIds().uid}:rwx`);
    const r = await bash(await turn(p, "agent"), "touch .pi/plan/x.md || touch .pi/x");
    expect(r).toMatchObject({ isError: true, code: "TOOL_FAILED" });
    expect(readdirSync(path.join(p.ws, ".pi/plan"))).toEqual([path.basename(proposal.artifactPath)]);
  });
});

/** A `.pi` tampered with outside pi-host: both doors refuse with the reason, nothing is repaired. */
async function expectRefusedUntouched(p: Project, reason: RegExp, snapshot: () => unknown) {
  const before = snapshot();
  const s = await submit(p);
  expect(s).toMatchObject({ isError: true, code: "PLAN_ARTIFACT_PATH_UNSAFE" });
  expect(s.content.map((c) => c.text).join("\n")).toMatch(reason);
  const b = await bash(await turn(p, "agent"), "echo ran > ran.txt");
  expect(b).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
  expect(b.content.map((c) => c.text).join("\n")).toMatch(reason);
  expect(existsSync(path.join(p.ws, "ran.txt"))).toBe(false);
  expect(snapshot()).toEqual(before);
}

describe("a .pi tampered with outside pi-host", () => {
  const pi = (p: Project) => path.join(p.ws, ".pi");
  const mode = (f: string) => () => lstatSync(f).mode;

  it("made group-writable", async () => {
    const p = await newProject();
    await pendingProposal(p);
    chmodSync(pi(p), 0o775);
    await expectRefusedUntouched(p, /\.pi is writable by its group or others \(mode 0775\)/, mode(pi(p)));
  });

  it("given an ACL entry u:pihost-sandbox:rwx", async () => {
    const p = await newProject();
    await pendingProposal(p);
    // With the mask left r-x the group bits stay r-x: the ACL entry itself is what is refused.
    execFileSync("setfacl", ["-m", `u:${SANDBOX_USER}:rwx,m::r-x`, pi(p)]);
    await expectRefusedUntouched(p, /ACL entry granting the sandbox user .* write/, () => acl(pi(p)));
  });

  it("replaced by a symlink", async () => {
    const p = await newProject();
    const elsewhere = path.join(stack.dir, `elsewhere-${++n}`);
    mkdirSync(path.join(elsewhere, "plan"), { recursive: true, mode: 0o755 });
    chmodSync(elsewhere, 0o755);
    symlinkSync(elsewhere, pi(p));
    await expectRefusedUntouched(p, /\.pi is a symlink or not a folder/, () => [
      lstatSync(pi(p)).isSymbolicLink(),
      readdirSync(path.join(elsewhere, "plan")),
    ]);
  });

  it("the pending plan's file replaced by a symlink: artifacts.read, the approve and the claim refuse it", async () => {
    const p = await newProject();
    const proposal = await pendingProposal(p);
    const file = path.join(p.ws, proposal.artifactPath);
    const original = readFileSync(file);
    unlinkSync(file);
    symlinkSync("/etc/passwd", file);
    expect(await refusalCode(readArtifact(proposal.proposalId))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    const resolve = () =>
      stack.client("alice").call("plans.resolve", {
        proposalId: proposal.proposalId,
        sessionId: proposal.sessionId,
        turnId: proposal.turnId,
        toolCallId: proposal.toolCallId,
        action: "approve",
        targetPermissionMode: "accept-edits",
      });
    // The approve re-hashes through the handle: a symlink is no plan, nothing changes.
    expect(await refusalCode(resolve())).toBe("PLAN_ARTIFACT_HASH_MISMATCH");
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    // Approved while the file was right, then swapped: the worker's claim re-hashes and refuses.
    unlinkSync(file);
    writeFileSync(file, original);
    await resolve();
    unlinkSync(file);
    symlinkSync("/etc/passwd", file);
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;
    expect(
      await refusalCode(stack.agentClient.call("claim", { turnId: execTurn, workerId: "testworker" })),
    ).toBe("PLAN_ARTIFACT_HASH_MISMATCH");
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    // Another file there (a regular one with other bytes) is served as what it is, never as the plan.
    unlinkSync(file);
    writeFileSync(file, "# Forged\n");
    expect(await readArtifact(proposal.proposalId)).toMatchObject({ matchesRecord: false });
    rmSync(file);
    mkdirSync(file);
    expect(await refusalCode(readArtifact(proposal.proposalId))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    rmSync(file, { recursive: true });
    expect(await refusalCode(readArtifact(proposal.proposalId))).toBe("FILE_NOT_FOUND");
  });
});

describe("a .pi that is not the host's", () => {
  it("owned by another (non-sandbox) uid, 0755, is accepted", async () => {
    const p = await newProject((ws) => {
      mkdirSync(path.join(ws, ".pi"), { mode: 0o755 });
      chownSync(path.join(ws, ".pi"), 4242, 4242);
    });
    const proposal = await pendingProposal(p);
    expect(lstatSync(path.join(p.ws, ".pi")).uid).toBe(4242);
    expect(lstatSync(path.join(p.ws, ".pi/plan")).uid).toBe(0);
    expect(await readArtifact(proposal.proposalId)).toMatchObject({ matchesRecord: true });
    const r = await bash(await turn(p, "agent"), "ls .pi/plan");
    expect(r).toMatchObject({ isError: false });
    expect(String(r.details?.stdout)).toContain(path.basename(proposal.artifactPath));
  });

  it("a repository tracking .pi/settings.json: plans sit beside it, git status works, the agent cannot change it", async () => {
    const settings = '{"theme":"dark"}\n';
    const p = await newProject((ws) => {
      const git = (...args: string[]) =>
        execFileSync(
          "git",
          ["-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@e.x", ...args],
          { cwd: ws },
        );
      git("init", "-q");
      mkdirSync(path.join(ws, ".pi"), { mode: 0o755 });
      writeFileSync(path.join(ws, ".pi/settings.json"), settings);
      git("add", ".pi/settings.json");
      git("commit", "-q", "-m", "settings");
      const { uid, gid } = sandboxIds();
      execFileSync("chown", ["-R", `${uid}:${gid}`, path.join(ws, ".git")]);
    });
    const proposal = await pendingProposal(p);
    expect(readdirSync(path.join(p.ws, ".pi")).sort()).toEqual(["plan", "settings.json"]);
    const a = await turn(p, "agent");
    const status = await bash(a, "git status --porcelain");
    expect(status).toMatchObject({ isError: false });
    expect(String(status.details?.stdout)).toContain(".pi/plan/");
    const change = await bash(a, `echo '{}' > .pi/settings.json`);
    expect(change).toMatchObject({ isError: true, code: "TOOL_FAILED" });
    expect(String(change.details?.stderr)).toContain("Read-only file system");
    expect(readFileSync(path.join(p.ws, ".pi/settings.json"), "utf8")).toBe(settings);
    expect(await readArtifact(proposal.proposalId)).toMatchObject({ matchesRecord: true });
  });
});
