// The oom_score_adj probe says what the kernel does: pinned exactly where the host holds
// CAP_SYS_RESOURCE (on this kind of machine, root without it: not pinned, the reason naming it), and
// a probe that cannot run is "not pinned" with its reason, never a claim.
import { describe, expect, it } from "vitest";
import { hasCapSysResource, oomScorePin } from "./sandbox-oom.ts";

const SANDBOX_USER = process.env.PI_SANDBOX_USER || "pihost-sandbox";

describe("oomScorePin", () => {
  it("is pinned exactly where this process holds CAP_SYS_RESOURCE", async () => {
    const capable = await hasCapSysResource();
    const pin = await oomScorePin({ user: SANDBOX_USER });
    expect(pin.oomScorePinned).toBe(capable);
    if (!capable) expect(pin.reason).toMatch(/lacks CAP_SYS_RESOURCE.*lower.*back to 0/);
    expect(await oomScorePin({ user: SANDBOX_USER })).toBe(pin);
  });

  it("without its sandbox user the probe cannot run: not pinned, and why", async () => {
    expect(await oomScorePin({ user: "pihost-no-such-user" })).toEqual({
      oomScorePinned: false,
      reason: "the sandbox user pihost-no-such-user does not exist",
    });
  });
});
