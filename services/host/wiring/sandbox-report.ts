// What the tool sandbox can do on this machine, said once at start (docs/operations.md "The Bash
// sandbox"): cgroups left by a host process that is gone are removed, each sandbox's bounds and the
// oom_score_adj pin are reported, and a host where no sandbox starts says so loudly (its /readyz
// then names `sandbox`).
import type { Logger } from "../../runtime/log.ts";
import type { HostConfig } from "../host-config.ts";
import { cleanupLeftoverCgroups, sandboxLimits } from "../tools/sandbox-limits.ts";
import { oomScorePin } from "../tools/sandbox-oom.ts";
import { sandboxAvailability } from "../tools/sandbox-probe.ts";

export async function reportSandbox(sandboxConfig: HostConfig["tools"]["sandbox"], log: Logger) {
  const leftover = await cleanupLeftoverCgroups(sandboxConfig);
  const bounds = (await sandboxLimits(sandboxConfig)).describe();
  const oom = await oomScorePin(sandboxConfig);
  const sandbox = await sandboxAvailability(sandboxConfig);
  if (!sandbox.available)
    log.error("host.sandbox_unavailable", {
      reason: sandbox.unavailableReason,
      message:
        "no tool sandbox starts on this host: Bash, BrowserPreview and the file tools are SANDBOX_UNAVAILABLE, /readyz answers 503 naming sandbox",
    });
  log[bounds.kind === "none" || !oom.oomScorePinned ? "warn" : "info"]("host.sandbox_bounds", {
    ...bounds,
    leftoverRemoved: leftover.removed,
    leftoverFailed: leftover.failed.length,
    oomScorePinned: oom.oomScorePinned,
    ...(oom.reason ? { oomReason: oom.reason } : {}),
    ...(bounds.kind === "none"
      ? {
          guarantee:
            "weaker: no per-sandbox process or memory limit (no usable cgroup); one session can exhaust the machine for all (docs/operations.md)",
        }
      : {}),
  });
  return sandbox;
}
