// The worker's side of live output (docs/protocol.md "Live output"): the model's text and thinking
// deltas, gathered for DELTA_INTERVAL_MS and sent to the host with `delta` (checked by the turn's
// token; workers never publish to people themselves), in order, never blocking the model's stream.
// A delta the host did not take is dropped: the final message carries the whole text anyway.
import { MAX_DELTA_CHARS } from "../protocol/agent-schemas.ts";
import type { TypedAgentClient } from "../protocol/rpc-client.ts";

export const DELTA_INTERVAL_MS = 50;
type Kind = "text" | "thinking" | "toolCall";

export function createDeltaSender(opts: { client: TypedAgentClient; turnId: string; token: string }) {
  let chunks: Array<{ kind: Kind; text: string; toolCallId?: string }> = [];
  let timer: NodeJS.Timeout | null = null;
  let index = 0;
  let chain: Promise<void> = Promise.resolve();

  function send(): void {
    timer = null;
    const out = chunks;
    chunks = [];
    for (const c of out)
      for (let i = 0; i < c.text.length; i += MAX_DELTA_CHARS) {
        const params = {
          turnId: opts.turnId,
          token: opts.token,
          index: index++,
          kind: c.kind,
          text: c.text.slice(i, i + MAX_DELTA_CHARS),
          ...(c.toolCallId ? { toolCallId: c.toolCallId } : {}),
        };
        chain = chain.then(
          () => opts.client.call("delta", params).then(() => {}),
          () => {},
        );
      }
    chain = chain.catch(() => {});
  }

  return {
    /** One delta of the model's stream; a tool call (its name and id) as the model emits it. */
    push(kind: Kind, text: string, toolCallId?: string): void {
      if (!text) return;
      const last = chunks.at(-1);
      if (kind !== "toolCall" && last?.kind === kind) last.text += text;
      else chunks.push({ kind, text, ...(toolCallId ? { toolCallId } : {}) });
      timer ??= setTimeout(send, DELTA_INTERVAL_MS);
    },
    /** Sends what waits and resolves when every delta so far was answered (before the final message). */
    async flush(): Promise<void> {
      if (timer) clearTimeout(timer);
      send();
      await chain;
    },
  };
}
