// The list commands read every page (printing each as it comes), stop at MAX_LIST_ROWS with a note,
// print one page with --limit and the command that continues, and merge the pages for --json: a
// host that pages `session.list` (docs/cli.md "Lists"), played by a double over 450 sessions.
import { describe, expect, it } from "vitest";
import type { CliBus } from "./cli-bus.ts";
import { MAX_LIST_ROWS } from "./list-command.ts";
import { cli } from "./test-cli.ts";

/** A host double of one newest-first list: `before` is the index where the page starts. */
function pagedBus(total: number, method = "session.list", field = "sessions") {
  const calls: Array<Record<string, unknown>> = [];
  const bus = {
    async call(m: string, params: Record<string, unknown> = {}) {
      if (m !== method) throw new Error(`unexpected ${m}`);
      calls.push(params);
      const start = typeof params.before === "string" ? Number(params.before.split(".")[0]) : 0;
      const limit = Number(params.limit ?? 50);
      const rows = Array.from({ length: Math.max(0, Math.min(limit, total - start)) }, (_, i) => ({
        id: `ses_${start + i}`,
        mode: "agent",
        planningState: "inactive",
        permissionMode: "ask",
        model: { provider: "scripted", model: "demo" },
        title: "",
      }));
      const end = start + rows.length;
      return { [field]: rows, next: end < total ? `${end}.ses_${end - 1}` : null };
    },
    async subscribe() {
      throw new Error("no subscriptions here");
    },
    async close() {},
  } as unknown as CliBus;
  return { bus, calls };
}

/** The command's run, its output split into lines. */
async function run(args: string[], bus: CliBus) {
  const r = await cli(args, bus);
  return { ...r, lines: r.stdout.split("\n").filter(Boolean) };
}

describe("list commands", () => {
  it("read every page by `next`, each row once, in the host's order, printing as pages come", async () => {
    const { bus, calls } = pagedBus(450);
    const r = await run(["session", "list"], bus);
    expect(r.code).toBe(0);
    expect(r.lines).toHaveLength(450);
    expect(r.lines.map((l) => l.split(" ")[0])).toEqual(Array.from({ length: 450 }, (_, i) => `ses_${i}`));
    expect(calls).toEqual([
      { limit: 200 },
      { limit: 200, before: "200.ses_199" },
      { limit: 200, before: "400.ses_399" },
    ]);
    expect(r.stderr).toBe("");
  });

  it("--json prints the merged list with next null", async () => {
    const { bus } = pagedBus(450);
    const r = await run(["--json", "session", "list"], bus);
    const merged = JSON.parse(r.stdout) as { sessions: Array<{ id: string }>; next: string | null };
    expect(merged.sessions).toHaveLength(450);
    expect(new Set(merged.sessions.map((s) => s.id)).size).toBe(450);
    expect(merged.next).toBeNull();
  });

  it("--limit prints one page and the command that continues; --before starts there", async () => {
    const { bus, calls } = pagedBus(450);
    const r = await run(["session", "list", "--limit", "10"], bus);
    expect(r.lines).toHaveLength(11);
    expect(r.lines[10]).toBe("more: pihost session list --limit 10 --before 10.ses_9");
    const next = await run(["session", "list", "--limit", "10", "--before", "10.ses_9"], bus);
    expect(next.lines[0]?.startsWith("ses_10 ")).toBe(true);
    expect(calls.slice(-2)).toEqual([{ limit: 10 }, { limit: 10, before: "10.ses_9" }]);
    const json = await run(["--json", "session", "list", "--limit", "3"], bus);
    expect(JSON.parse(json.stdout)).toMatchObject({ next: "3.ses_2" });
  });

  it("--limit out of range is a usage error and sends nothing", async () => {
    const { bus, calls } = pagedBus(5);
    for (const bad of ["0", "201", "x"]) {
      const r = await run(["session", "list", "--limit", bad], bus);
      expect(r.code).toBe(2);
    }
    expect(calls).toEqual([]);
  });

  it(`stops at ${MAX_LIST_ROWS} rows with a note naming where to continue`, async () => {
    const { bus, calls } = pagedBus(MAX_LIST_ROWS + 450);
    const r = await run(["session", "list"], bus);
    expect(r.code).toBe(0);
    expect(r.lines).toHaveLength(MAX_LIST_ROWS);
    expect(calls).toHaveLength(MAX_LIST_ROWS / 200);
    expect(r.stderr).toBe(
      `note: stopped after ${MAX_LIST_ROWS} rows; more: pihost session list --before ${MAX_LIST_ROWS}.ses_${MAX_LIST_ROWS - 1}\n`,
    );
  });

  it("an empty list says so", async () => {
    const { bus } = pagedBus(0);
    expect((await run(["session", "list"], bus)).lines).toEqual(["no sessions"]);
  });
});
