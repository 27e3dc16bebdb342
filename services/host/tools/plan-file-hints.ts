// Where a proposal's plan file is, as this host submitted or approved it (docs/architecture.md
// "Plans"): plans.resolve and the execution claim start hashing the file while they read the row,
// instead of after. A hint only: its hash is used when the row names the same workspace and path,
// and is compared with the row's hash as before; without a hint (another host, a restart) the file
// is hashed after the read.
import { planFileHash } from "./plan-artifact.ts";

/** Hints kept at most (the oldest goes first). */
const HINTS_KEPT = 1000;

interface Hint {
  workspaceRoot: string;
  artifactPath: string;
}

/** A hash started early for a hint, to be used only if the row names the same file. */
export interface EarlyHash extends Hint {
  hash: Promise<string | null>;
}

export function createPlanFileHints() {
  const hints = new Map<string, Hint>();
  return {
    /** `key` (a proposal id, or an execution turn id) names this plan file. */
    remember(key: string, workspaceRoot: string, artifactPath: string): void {
      hints.delete(key);
      hints.set(key, { workspaceRoot, artifactPath });
      while (hints.size > HINTS_KEPT) hints.delete(hints.keys().next().value as string);
    },
    /** Starts hashing the file `key` names, or null without a hint. Never rejects. */
    hashEarly(key: string): EarlyHash | null {
      const hint = hints.get(key);
      return hint ? { ...hint, hash: planFileHash(hint.workspaceRoot, hint.artifactPath) } : null;
    },
    forget(key: string): void {
      hints.delete(key);
    },
  };
}

export type PlanFileHints = ReturnType<typeof createPlanFileHints>;

/** The plan file's hash now: the early one when it is of this very file, else read now (null: unreadable). */
export function hashOf(early: EarlyHash | null | undefined, workspaceRoot: string, artifactPath: string) {
  if (early && early.workspaceRoot === workspaceRoot && early.artifactPath === artifactPath)
    return early.hash;
  return planFileHash(workspaceRoot, artifactPath);
}
