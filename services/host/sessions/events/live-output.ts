// Live model output (docs/protocol.md "Live output"): a worker's streamed text and thinking
// deltas, coalesced per turn into messages at least LIVE_INTERVAL_MS apart and at most
// MAX_DELTA_CHARS each, published to the session's owner and current approvers on
// `<prefix>.live.<principal>.<sessionId>.delta`. Nothing here is stored or numbered: the final
// `message` event is the record. The recipients are read at each flush, so a removed approver
// stops receiving at once.
import type { NatsConnection } from "@nats-io/nats-core";
import { MAX_DELTA_CHARS } from "../../../protocol/agent-schemas.ts";
import { encodeJson } from "../../../protocol/envelope.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import { liveSubject } from "../../../protocol/subjects.ts";
import type { Clock } from "../../clock.ts";
import type { Audience } from "./event-publisher.ts";

export const LIVE_INTERVAL_MS = 100;
/** Characters a turn may have waiting; more (a model far faster than people read) is dropped and counted. */
const MAX_PENDING_CHARS = 512 * 1024;

type Kind = "text" | "thinking" | "toolCall";
interface Chunk {
  kind: Kind;
  text: string;
  toolCallId?: string;
}
interface Pending {
  sessionId: string;
  chunks: Chunk[];
  chars: number;
  dropped: number;
  timer: ReturnType<Clock["setTimeout"]> | null;
  lastAt: number;
}

export function createLiveOutput(deps: {
  nc: NatsConnection;
  prefix: string;
  clock: Clock;
  log: Logger;
  /** The session's owner and current approvers (members now). */
  audienceOf: (sessionId: string) => Promise<Audience>;
}) {
  const { nc, prefix, clock, log } = deps;
  const turns = new Map<string, Pending>();

  /** The next message of a turn: its first MAX_DELTA_CHARS characters, kinds kept in order. */
  function take(p: Pending): Chunk[] {
    const out: Chunk[] = [];
    let room = MAX_DELTA_CHARS;
    while (room > 0 && p.chunks.length > 0) {
      const c = p.chunks[0]!;
      const piece = c.text.slice(0, room);
      out.push({ kind: c.kind, text: piece, ...(c.toolCallId ? { toolCallId: c.toolCallId } : {}) });
      room -= piece.length;
      p.chars -= piece.length;
      if (piece.length === c.text.length) p.chunks.shift();
      else c.text = c.text.slice(piece.length);
    }
    return out;
  }

  async function flush(turnId: string): Promise<void> {
    const p = turns.get(turnId);
    if (!p) return;
    p.timer = null;
    const chunks = take(p);
    const dropped = p.dropped;
    p.dropped = 0;
    p.lastAt = clock.now();
    if (p.chunks.length > 0) schedule(turnId, p);
    else turns.delete(turnId);
    if (chunks.length === 0) return;
    try {
      const to = await deps.audienceOf(p.sessionId);
      const data = encodeJson({
        type: "delta",
        sessionId: p.sessionId,
        turnId,
        chunks,
        ...(dropped > 0 ? { dropped } : {}),
        at: clock.date().toISOString(),
      });
      for (const principal of new Set([to.owner, ...to.approvers]))
        if (principal) nc.publish(liveSubject(prefix, principal, p.sessionId), data);
    } catch (err) {
      log.warn("host.live_output_failed", { turnId, ...errorFields(err) });
    }
  }

  function schedule(turnId: string, p: Pending): void {
    if (p.timer) return;
    const wait = Math.max(0, p.lastAt + LIVE_INTERVAL_MS - clock.now());
    p.timer = clock.setTimeout(() => void flush(turnId), wait);
  }

  return {
    /** One delta of a turn; published with what else arrives within the interval. */
    push(sessionId: string, turnId: string, kind: Kind, text: string, toolCallId?: string): void {
      let p = turns.get(turnId);
      if (!p) {
        p = { sessionId, chunks: [], chars: 0, dropped: 0, timer: null, lastAt: 0 };
        turns.set(turnId, p);
      }
      if (p.chars + text.length > MAX_PENDING_CHARS) {
        p.dropped += text.length;
      } else {
        const last = p.chunks.at(-1);
        if (kind !== "toolCall" && last?.kind === kind) last.text += text;
        else p.chunks.push({ kind, text, ...(toolCallId ? { toolCallId } : {}) });
        p.chars += text.length;
      }
      schedule(turnId, p);
    },
  };
}

export type LiveOutput = ReturnType<typeof createLiveOutput>;
