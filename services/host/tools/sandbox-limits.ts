// PLACEHOLDER (lead): per-sandbox bounds (cgroups, oom_score_adj). Replaced by the limits work.
import type { SandboxSettings } from "./sandbox.ts";

export interface AttachedLimits {
  release(): Promise<void>;
}

export interface SandboxLimits {
  attach(pids: readonly number[], label: string): Promise<AttachedLimits>;
}

const none: SandboxLimits = { attach: async () => ({ release: async () => {} }) };

export async function sandboxLimits(_settings: SandboxSettings): Promise<SandboxLimits> {
  return none;
}
