// Abort signals of running tool calls by turn: when a turn dies (abort, revocation, lost lease, end)
// every tool it still runs is aborted, so a Bash command never outlives its turn; when the host may
// have been taken over, every tool of every turn is (cancelAll).

export function createToolAborts() {
  const byTurn = new Map<string, Set<AbortController>>();
  return {
    /** A signal for one tool call of `turnId`; call the returned release when the call ends. */
    open(turnId: string): { signal: AbortSignal; release: () => void } {
      const ac = new AbortController();
      let set = byTurn.get(turnId);
      if (!set) {
        set = new Set();
        byTurn.set(turnId, set);
      }
      set.add(ac);
      return {
        signal: ac.signal,
        release: () => {
          set.delete(ac);
          if (set.size === 0 && byTurn.get(turnId) === set) byTurn.delete(turnId);
        },
      };
    },
    cancel(turnId: string): void {
      for (const ac of byTurn.get(turnId) ?? []) ac.abort();
      byTurn.delete(turnId);
    },
    /**
     * Aborts every running tool call of every turn (each Bash sandbox is killed with all it
     * started): the host may have been taken over, so nothing it runs may go on. Returns how many.
     */
    cancelAll(): number {
      let n = 0;
      for (const set of byTurn.values())
        for (const ac of set) {
          ac.abort();
          n += 1;
        }
      byTurn.clear();
      return n;
    },
  };
}

export type ToolAborts = ReturnType<typeof createToolAborts>;
