// The workspace lock across hosts (issue #16 clause 5): file tools and Bash of one workspace run one
// at a time even when the sessions are owned by different hosts. Two lock holders on one real
// Postgres stand for two hosts: the same workspace waits, another runs at once, and a holder whose
// connection dies (a host killed mid-tool) releases the lock.
import { describe, expect, it } from "vitest";
import { createWorkspaceAdvisoryLocks } from "../services/host/store/workspace-advisory-lock.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("wslock");

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open, opened };
}

describe("the workspace lock across hosts", () => {
  it("serializes one workspace across two hosts and lets another workspace run at once", async () => {
    const hostA = createWorkspaceAdvisoryLocks(stack.db.url, { max: 2 });
    const hostB = createWorkspaceAdvisoryLocks(stack.db.url, { max: 2 });
    try {
      const order: string[] = [];
      const a = gate();
      const aRunning = gate();
      const first = hostA.hold("/ws/one", async () => {
        order.push("A start");
        aRunning.open();
        await a.opened;
        order.push("A end");
      });
      await aRunning.opened;
      const second = hostB.hold("/ws/one", async () => {
        order.push("B same workspace");
      });
      await hostB.hold("/ws/two", async () => {
        order.push("B other workspace");
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(order).toEqual(["A start", "B other workspace"]);
      a.open();
      await Promise.all([first, second]);
      expect(order).toEqual(["A start", "B other workspace", "A end", "B same workspace"]);
    } finally {
      await hostA.close();
      await hostB.close();
    }
  });

  it("a wait longer than waitMs is refused HOST_OVERLOADED as a value, and the tool does not run", async () => {
    const hostA = createWorkspaceAdvisoryLocks(stack.db.url, { max: 1 });
    const hostB = createWorkspaceAdvisoryLocks(stack.db.url, { max: 1, waitMs: 150 });
    try {
      const held = gate();
      const done = gate();
      const first = hostA.hold("/ws/long", async () => {
        held.open();
        await done.opened;
        return "A ran";
      });
      await held.opened;
      let ran = false;
      const refused = await hostB.hold("/ws/long", async () => {
        ran = true;
      });
      expect(refused).toMatchObject({ ok: false, refusal: { code: "HOST_OVERLOADED" } });
      expect(ran).toBe(false);
      done.open();
      expect(await first).toEqual({ ok: true, value: "A ran" });
      // The refused wait left nothing held: B takes the workspace at once now.
      expect(await hostB.hold("/ws/long", async () => "B ran")).toEqual({ ok: true, value: "B ran" });
    } finally {
      await hostA.close();
      await hostB.close();
    }
  });

  it("a holder whose connection dies (its host was killed) releases the lock", async () => {
    const hostA = createWorkspaceAdvisoryLocks(stack.db.url, { max: 1 });
    const hostB = createWorkspaceAdvisoryLocks(stack.db.url, { max: 1 });
    try {
      const held = gate();
      const later = gate();
      const first = hostA.hold("/ws/dies", async () => {
        held.open();
        await later.opened; // its tool would still be running: only the connection died
      });
      void first.catch(() => {});
      await held.opened;
      let ran = false;
      const second = hostB.hold("/ws/dies", async () => {
        ran = true;
      });
      await new Promise((r) => setTimeout(r, 200));
      expect(ran).toBe(false);
      await stack.db.pool.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'pi-host workspace locks' AND query LIKE '%pg_advisory_lock%' AND state = 'idle'",
      );
      await second;
      expect(ran).toBe(true);
      later.open();
      await first.catch(() => {});
    } finally {
      await hostA.close().catch(() => {});
      await hostB.close();
    }
  });
});
