// The oom_score_adj of docs/security.md "Each sandbox has its own bounds", as the attack: a Bash
// sandbox writes 0 to its own oom_score_adj. Where the host holds CAP_SYS_RESOURCE the kernel refuses
// (1000 is a floor); where it does not (this machine: root without it), the write works, and the host
// must say so: its start line host.sandbox_bounds, host.status for a settings admin, docs/security.md.
// The capability cannot be created here: CAP_SYS_RESOURCE is missing from every process's bounding
// set, and a user namespace's capabilities do not count (the kernel checks the initial namespace).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./support/processes.ts";
import { openStackDir, sandboxTurn } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool } from "./support/worker-double.ts";

const stack = useStack("sandboxoom", { prepare: openStackDir, host: true });

describe("a sandbox's oom_score_adj", () => {
  it("oom_score_adj 1000 is a floor where the host can pin it; where it cannot, host.status and security.md say so", async () => {
    const { assignment } = await sandboxTurn(stack, "agent");
    const r = await executeTool(stack, assignment, "oom1", "Bash", {
      command:
        "cat /proc/self/oom_score_adj; echo 0 > /proc/self/oom_score_adj && echo lowered; cat /proc/self/oom_score_adj",
    });
    const out = String(r.details?.stdout).trim().split("\n");
    // Linux pins it (oom_score_adj_min) only when the writer of 1000 holds CAP_SYS_RESOURCE (bit 24).
    const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(
      readFileSync(`/proc/${stack.host!.child.pid}/status`, "utf8"),
    )![1]!;
    const capable = ((BigInt(`0x${capEff}`) >> 24n) & 1n) === 1n;
    const status = await stack.client("alice").call("host.status", {});
    const logged = await stack.host!.waitForEvent("host.sandbox_bounds");
    expect(logged).toMatchObject({
      level: capable ? "info" : "warn",
      oomScorePinned: capable,
      ...(capable ? {} : { oomReason: status.sandbox?.reason }),
    });
    expect(out[0]).toBe("1000");
    if (capable) {
      expect(status.sandbox).toEqual({ available: true, oomScorePinned: true });
      expect(r.code).toBe("TOOL_FAILED");
      expect(out).toEqual(["1000", "1000"]);
    } else {
      // This machine: root without CAP_SYS_RESOURCE. The sandbox can lower it, and the host says so.
      expect(out).toEqual(["1000", "lowered", "0"]);
      expect(status.sandbox).toEqual({
        available: true,
        oomScorePinned: false,
        reason: expect.stringContaining("CAP_SYS_RESOURCE"),
      });
      const security = readFileSync(path.join(REPO_ROOT, "docs/security.md"), "utf8");
      expect(security).toContain("`oomScorePinned: false`");
      expect(security).not.toMatch(/every sandbox process\s+carries\s+`oom_score_adj=1000`, so/);
    }
  });
});
