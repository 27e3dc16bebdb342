// No list anyone else can blow up (docs/protocol.md "Lists and pages"), written as the attack: bob
// makes alice a member of his project without asking and names her approver of 2,400 sessions (400
// through the real API, 2,000 straight into the database, their titles made to cost six bytes a
// character on the wire). Together they are several times NATS's max_payload, which made alice's
// unpaged session.list REPLY_TOO_LARGE for good. Now every page stays within its bound, the pages
// hold every session exactly once while bob keeps creating more, a session bigger than a page's byte
// bound still comes (alone), carol (no approver) sees none of them, and `pihost session list` and
// its --json read them all.
import { describe, expect, it } from "vitest";
import { LIST_PAGE_MAX_BYTES } from "../services/protocol/pages.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import { bulkSessions } from "./support/bulk-rows.ts";
import { jsonOut, pihost } from "./support/cli.ts";
import { readPages } from "./support/pages.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("listpaging", { host: true });

const API_SESSIONS = 400;
const BULK_SESSIONS = 2_000;

/** Runs `fn` over `items` with `width` calls in flight. */
async function inParallel<T>(items: T[], width: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) await fn(t);
    }),
  );
}

describe("session.list under an approver flood", () => {
  it("alice's pages each fit, hold every session exactly once while bob adds more, and the CLI reads them all", async () => {
    const bob = stack.client("bob");
    const alice = stack.client("alice");
    const maxPayload = stack.nc.info?.max_payload ?? 1024 * 1024;
    const project = await bob.call("projects.create", {
      name: "flood",
      workspaceRoot: stack.newWorkspace("flood"),
    });
    await bob.call("projects.members.add", { projectId: project.id, principal: "alice" });

    // 400 sessions through the API (the real path), 2,000 in bulk; alice owns three herself.
    const started = Date.now();
    const viaApi: string[] = [];
    await inParallel(
      Array.from({ length: API_SESSIONS }, (_, i) => i),
      8,
      async (i) => {
        const s = await bob.call("session.create", {
          projectId: project.id,
          title: `\u0001`.repeat(190) + i,
          approvers: ["alice"],
        });
        viaApi.push(s.id);
      },
    );
    const apiMs = Date.now() - started;
    const bulk = await bulkSessions(stack, {
      projectId: project.id,
      owner: "bob",
      approvers: ["alice"],
      count: BULK_SESSIONS,
      prefix: "ses_flood",
      title: "repeat(chr(1), 190)",
    });
    // One session far over a page's byte bound (still within max_payload): it comes alone.
    const [huge] = await bulkSessions(stack, {
      projectId: project.id,
      owner: "bob",
      approvers: ["alice"],
      count: 1,
      prefix: "ses_huge",
      title: `repeat('h', ${LIST_PAGE_MAX_BYTES + 40_000})`,
    });
    const own: string[] = [];
    for (let i = 0; i < 3; i++) own.push((await alice.call("session.create", { projectId: project.id })).id);
    const before = new Set([...viaApi, ...bulk, huge!, ...own]);
    expect(before.size).toBe(API_SESSIONS + BULK_SESSIONS + 4);

    // Bob keeps going while alice reads: three new sessions naming her after every page.
    const meanwhile: string[] = [];
    const pageMs: number[] = [];
    const timed = async (p: Record<string, unknown>) => {
      const t0 = performance.now();
      const r = await alice.call("session.list", p);
      pageMs.push(performance.now() - t0);
      return r;
    };
    const read = await readPages<SessionView>(timed, {
      items: "sessions",
      cursor: "before",
      limit: 200,
      maxPayload,
      between: async () => {
        for (let i = 0; i < 3; i++)
          meanwhile.push(
            (
              await bob.call("session.create", {
                projectId: project.id,
                approvers: ["alice"],
              })
            ).id,
          );
      },
    });
    const ids = read.all.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((id) => before.has(id)).length).toBe(before.size);
    // Newest first, so what bob created meanwhile (newer than the first page) is on no later page.
    expect(ids.filter((id) => meanwhile.includes(id))).toEqual([]);
    const order = read.all.map((s) => [s.createdAt, s.id] as const);
    for (let i = 1; i < order.length; i++) expect(order[i - 1]! >= order[i]!).toBe(true);
    // Together far over one message: the unpaged reply could never have been sent.
    const total = Buffer.byteLength(JSON.stringify(read.all));
    expect(total).toBeGreaterThan(3 * maxPayload);
    // The byte bound cut pages below their 200 rows, and the huge session came alone.
    expect(read.pages.some((p, i) => p.length < 200 && i < read.pages.length - 1)).toBe(true);
    expect(read.pages.find((p) => p.some((s) => s.id === huge))).toHaveLength(1);
    console.log(
      `list-paging: ${API_SESSIONS} sessions via session.create in ${apiMs} ms; ${ids.length} read in ${read.pages.length} pages of limit 200 (${Math.round(pageMs.reduce((a, b) => a + b, 0))} ms in all, slowest page ${Math.round(Math.max(...pageMs))} ms), ${total} bytes in all`,
    );

    // The default page (no limit) is bounded the same way.
    const first = await alice.call("session.list", {});
    expect(first.sessions).toHaveLength(50);
    expect(first.next).not.toBeNull();

    // Carol, no approver of any, reads none; a malformed or foreign position is INVALID_PARAMS.
    expect(await stack.client("carol").call("session.list", {})).toEqual({ sessions: [], next: null });
    for (const before of ["nope", "12", "1.2.3.ses_x"])
      expect(await refusalCode(alice.raw("session.list", { before }))).toBe("INVALID_PARAMS");

    // pihost reads every page; --json is the merged list, each session once.
    const all = new Set([...before, ...meanwhile]);
    const cli = await pihost(stack, ["--json", "session", "list"], "alice");
    expect(cli.code).toBe(0);
    const merged = jsonOut(cli) as { sessions: SessionView[]; next: string | null };
    expect(merged.next).toBeNull();
    expect(merged.sessions.map((s) => s.id).sort()).toEqual([...all].sort());
    const human = await pihost(stack, ["session", "list", "--limit", "5"], "alice");
    expect(human.code).toBe(0);
    expect(human.stdout.trim().split("\n").at(-1)).toMatch(
      /^more: pihost session list --limit 5 --before \S+$/,
    );
  });
});
