// artifacts.read in byte-range pages (issue #12 clause 2a): a plan bigger than any page is read
// page by page, each reply within the server's max_payload, and reassembles to the submitted bytes
// even where page edges cut UTF-8 characters; `pihost plans show` does the same, hashes the bytes
// itself and warns (exit 1) when they are not what was submitted; a non-approver gets nothing.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createClientApi } from "../services/host/bus/client-api.ts";
import { ok, unwrap } from "../services/protocol/result.ts";
import { pihost as runPihost } from "./support/cli.ts";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import type { ArtifactContent, ProposalView } from "../services/protocol/schemas.ts";
import { rpcSubject } from "../services/protocol/subjects.ts";
import { artifactPages, readArtifact } from "./support/artifacts.ts";
import { newPlanSession, submitted } from "./support/plans.ts";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";

const stack = useStack("artpages", { host: true });

const PAGE = 7000;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** About 100 KiB of markdown with two-, three- and four-byte characters on every line. */
function bigPlan(): string {
  const lines = ["# A long plan ✓\n\n"];
  for (let i = 0; Buffer.byteLength(lines.join("")) < 100 * 1024; i++)
    lines.push(`${i + 1}. Step ${i}: café naïve — 東京 🙂 ${"x".repeat(i % 17)}\n`);
  return lines.join("");
}

/** `pihost <args>` in this process, on a real NATS connection, as `principal`. */
const pihost = (args: string[], principal = "alice") => runPihost(stack, args, principal);

/** One artifacts.read request as raw bytes on the wire: the reply's size and its envelope. */
async function rawRead(principal: string, params: Record<string, unknown>) {
  const msg = await stack.nc.request(
    rpcSubject(stack.env.prefix, principal, "artifacts.read"),
    encodeJson(params),
    { timeout: 10_000 },
  );
  return {
    bytes: msg.data.byteLength,
    body: decodeJson(msg.data) as { result?: ArtifactContent; error?: unknown },
  };
}

describe("artifacts.read in pages", () => {
  const markdown = bigPlan();
  const submittedBytes = Buffer.from(markdown);
  let proposal: ProposalView;
  let file: string;
  let workspaceRoot: string;

  beforeAll(async () => {
    const { session, ws } = await newPlanSession(stack, "big", []);
    // bob is a member of the project, not an approver of the session.
    await addMembers(stack, session.projectId, ["bob"]);
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    const r = await stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "exit-1",
      tool: "ExitPlanMode",
      args: { title: "Long", markdown, question: "Go?" },
      batch: [{ toolCallId: "exit-1", tool: "ExitPlanMode" }],
    });
    expect(r).toMatchObject({ isError: false, terminate: true });
    proposal = await submitted(events);
    events.stop();
    workspaceRoot = ws;
    file = path.join(ws, proposal.artifactPath);
    expect(readFileSync(file).equals(submittedBytes)).toBe(true);
  });

  it("many small pages reassemble to the exact submitted bytes, page edges inside characters", async () => {
    const pages = await artifactPages(stack.client("alice"), proposal.proposalId, PAGE);
    expect(pages.length).toBe(Math.ceil(submittedBytes.byteLength / PAGE));
    expect(pages.length).toBeGreaterThan(10);
    const parts = pages.map((p) => Buffer.from(p.data, "base64"));
    for (const [i, p] of pages.entries()) {
      expect(p).toMatchObject({
        proposalId: proposal.proposalId,
        path: proposal.artifactPath,
        byteSize: submittedBytes.byteLength,
        sha256: proposal.sha256,
        recordedSha256: proposal.sha256,
        matchesRecord: true,
        offset: i * PAGE,
        nextOffset: i === pages.length - 1 ? null : (i + 1) * PAGE,
      });
      expect(parts[i]!.byteLength).toBe(i === pages.length - 1 ? submittedBytes.byteLength - i * PAGE : PAGE);
    }
    const whole = Buffer.concat(parts);
    expect(whole.equals(submittedBytes)).toBe(true);
    expect(sha256(whole)).toBe(proposal.sha256);
    // Some edges fall on a UTF-8 continuation byte: a page alone is not valid text, the whole is.
    const cut = pages.slice(1).filter((p) => (submittedBytes[p.offset]! & 0xc0) === 0x80);
    expect(cut.length).toBeGreaterThan(0);
    expect(whole.toString("utf8")).toBe(markdown);
  });

  it("every reply, paged or whole, is within the server's max_payload", async () => {
    const maxPayload = stack.nc.info!.max_payload;
    for (const maxBytes of [PAGE, undefined, 64 * 1024 * 1024]) {
      let offset: number | null = 0;
      let total = 0;
      while (offset !== null) {
        const params = { proposalId: proposal.proposalId, offset, ...(maxBytes ? { maxBytes } : {}) };
        const { bytes, body } = await rawRead("alice", params);
        expect(body.error).toBeUndefined();
        expect(bytes).toBeLessThan(maxPayload);
        const page = body.result!;
        const n = Buffer.from(page.data, "base64").byteLength;
        // No page holds more than three quarters of half of max_payload, nor more than asked.
        expect(n).toBeLessThanOrEqual(Math.min(maxBytes ?? Infinity, Math.floor((maxPayload / 2) * 0.75)));
        total += n;
        offset = page.nextOffset;
      }
      expect(total).toBe(submittedBytes.byteLength);
    }
  });

  it("the host's own page bound (maxPageBytes, 512 KiB when not given) caps every page", async () => {
    // The handler alone, on the real plan file: only plans.get is reached before the file is read.
    const api = (maxPageBytes?: number) =>
      createClientApi({
        db: null as never,
        sessions: null as never,
        supervisor: null as never,
        plans: {
          get: async () => ok({ ...proposal, workspaceRoot, owner: "alice", approvers: [] }),
        } as never,
        hostId: "h",
        devMode: true,
        ...(maxPageBytes === undefined ? {} : { maxPageBytes }),
      })["artifacts.read"];
    const sizes = async (read: ReturnType<typeof api>, maxBytes?: number) => {
      const out: number[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const page: ArtifactContent = unwrap(
          await read(
            "alice",
            { proposalId: proposal.proposalId, offset, ...(maxBytes === undefined ? {} : { maxBytes }) },
            {},
          ),
        );
        out.push(Buffer.from(page.data, "base64").byteLength);
        offset = page.nextOffset;
      }
      return out;
    };
    const size = submittedBytes.byteLength;
    const bounded = api(10_000);
    expect(await sizes(bounded)).toEqual(
      Array.from({ length: Math.ceil(size / 10_000) }, (_, i) => Math.min(10_000, size - i * 10_000)),
    );
    expect(Math.max(...(await sizes(bounded, 64 * 1024 * 1024)))).toBe(10_000);
    expect(Math.max(...(await sizes(bounded, PAGE)))).toBe(PAGE);
    expect(await sizes(api())).toEqual([size]);
    expect(await refusalCode(api()("bob", { proposalId: proposal.proposalId }, {}).then(unwrap))).toBe(
      "FORBIDDEN",
    );
  });

  it("the end is an empty last page; past the end is INVALID_PARAMS", async () => {
    const alice = stack.client("alice");
    const size = submittedBytes.byteLength;
    expect(
      await alice.call("artifacts.read", { proposalId: proposal.proposalId, offset: size }),
    ).toMatchObject({
      offset: size,
      data: "",
      nextOffset: null,
      byteSize: size,
    });
    expect(
      await refusalCode(alice.call("artifacts.read", { proposalId: proposal.proposalId, offset: size + 1 })),
    ).toBe("INVALID_PARAMS");
    for (const bad of [{ offset: -1 }, { maxBytes: 0 }, { offset: 1.5 }, { maxBytes: "7000" }]) {
      expect(
        await refusalCode(alice.raw("artifacts.read", { proposalId: proposal.proposalId, ...bad })),
      ).toBe("INVALID_PARAMS");
    }
  });

  it("a member who is not an approver gets FORBIDDEN on every page", async () => {
    const bob = stack.client("bob");
    const size = submittedBytes.byteLength;
    for (let offset = 0; offset <= size + PAGE; offset += PAGE) {
      expect(
        await refusalCode(
          bob.call("artifacts.read", { proposalId: proposal.proposalId, offset, maxBytes: PAGE }),
        ),
      ).toBe("FORBIDDEN");
    }
    const r = await pihost(["plans", "show", proposal.proposalId], "bob");
    expect(r).toMatchObject({ code: 1, stdout: "" });
    expect(r.stderr).toMatch(/^error FORBIDDEN: /);
  });

  it("pihost plans show prints the exact bytes and exits 0; --json carries its own hash", async () => {
    const r = await pihost(["plans", "show", proposal.proposalId]);
    // The hash beside the record goes to stderr, so stdout stays the file's exact bytes.
    expect(r.stderr).toBe(
      `plan file: ${proposal.artifactPath} (${submittedBytes.byteLength} bytes), sha256 ${proposal.sha256} matches the record\n`,
    );
    expect(r.code).toBe(0);
    expect(Buffer.from(r.stdout).equals(submittedBytes)).toBe(true);
    const j = await pihost(["--json", "plans", "show", proposal.proposalId]);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual({
      proposalId: proposal.proposalId,
      path: proposal.artifactPath,
      byteSize: submittedBytes.byteLength,
      sha256: proposal.sha256,
      recordedSha256: proposal.sha256,
      matchesRecord: true,
      content: markdown,
    });
  });

  it("after the file is edited on disk: the edited bytes, PLAN_ARTIFACT_HASH_MISMATCH on stderr, exit 1", async () => {
    const edited = Buffer.from(markdown.replace("Step 1234:", "Step 1234 (and rm -rf /):"));
    expect(edited.equals(submittedBytes)).toBe(false);
    writeFileSync(file, edited);
    try {
      const r = await pihost(["plans", "show", proposal.proposalId]);
      expect(r.code).toBe(1);
      expect(Buffer.from(r.stdout).equals(edited)).toBe(true);
      expect(r.stderr).toBe(
        `warning PLAN_ARTIFACT_HASH_MISMATCH: the plan file ${proposal.artifactPath} no longer matches what was submitted: sha256 ${sha256(edited)}, recorded ${proposal.sha256}; the host refuses to approve it\n`,
      );
      // approve says it loudly too, before the host refuses the approval itself (exit 1).
      const a = await pihost(["plans", "approve", proposal.proposalId, "--mode", "ask"]);
      expect(a.code).toBe(1);
      expect(a.stderr).toMatch(/^warning PLAN_ARTIFACT_HASH_MISMATCH: the plan file .* no longer matches/m);
      expect(a.stderr).toMatch(/^error PLAN_ARTIFACT_HASH_MISMATCH: /m);
      const j = await pihost(["--json", "plans", "show", proposal.proposalId]);
      expect(j.code).toBe(1);
      expect(JSON.parse(j.stdout)).toMatchObject({
        sha256: sha256(edited),
        recordedSha256: proposal.sha256,
        matchesRecord: false,
      });
      // The host says the same of each page.
      const read = await readArtifact(stack.client("alice"), proposal.proposalId, PAGE);
      expect(read).toMatchObject({
        sha256: sha256(edited),
        recordedSha256: proposal.sha256,
        matchesRecord: false,
      });
      expect(read.bytes.equals(edited)).toBe(true);
    } finally {
      writeFileSync(file, submittedBytes);
    }
  });
});
