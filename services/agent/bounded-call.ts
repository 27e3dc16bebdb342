// The worker's side of the message bound (docs/protocol.md "Message bounds"): a request body too big
// for the server's max_payload (an assistant message or tool arguments holding a 512 KiB plan of
// control characters, say) goes as `body.part` requests, then as `{turnId, token, bodyParts}`; a
// context page's entry in parts is joined again. Nothing is cut.
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { MAX_PARTS } from "../protocol/agent-schemas.ts";
import { splitWithinBytes } from "../protocol/byte-bounds.ts";
import type { ParamsOf, ResultOf } from "../protocol/methods.ts";
import type { TypedAgentClient } from "../protocol/rpc-client.ts";

/** Room kept under max_payload for the subject, headers and the part envelope. */
const SLACK_BYTES = 64 * 1024;

/** The largest request body sent whole on this connection. */
export function wholeBodyBytes(nc: NatsConnection): number {
  return (nc.info?.max_payload ?? 1024 * 1024) - SLACK_BYTES;
}

/** `method` with `params`, whole when it fits, else in parts (the host joins them first). */
export async function callBounded<M extends "append" | "tools.execute">(
  nc: NatsConnection,
  client: TypedAgentClient,
  method: M,
  params: ParamsOf<M>,
): Promise<ResultOf<M>> {
  const json = JSON.stringify(params);
  const max = wholeBodyBytes(nc);
  if (Buffer.byteLength(json) <= max) return client.raw<ResultOf<M>>(method, params);
  // Each part's text is escaped again inside its own request: half the bound leaves room for that.
  const parts = splitWithinBytes(json, Math.floor(max / 2));
  if (parts.length > MAX_PARTS)
    throw new Error(`the ${method} body is too big to send (${parts.length} parts)`);
  const partId = `bp_${randomBytes(9).toString("base64url")}`;
  for (const [index, text] of parts.entries())
    await client.call("body.part", {
      turnId: params.turnId,
      token: params.token,
      partId,
      index,
      count: parts.length,
      text,
    });
  // The stand-in for the whole body (docs/protocol.md "Message bounds"): not `ParamsOf<M>`, so raw.
  return client.raw<ResultOf<M>>(method, { turnId: params.turnId, token: params.token, bodyParts: partId });
}

interface Part {
  piHostPart: { index: number; count: number; json: string };
}

const isPart = (m: unknown): m is Part =>
  typeof m === "object" && m !== null && typeof (m as Part).piHostPart?.json === "string";

/** Joins the entries a context page sent in parts; whole entries pass through. */
export function createPartJoiner() {
  let pending: string[] = [];
  return {
    /** The complete messages of one page, in order (a split entry once its last part arrived). */
    add(messages: readonly unknown[]): unknown[] {
      const out: unknown[] = [];
      for (const m of messages) {
        if (!isPart(m)) {
          out.push(m);
          continue;
        }
        if (m.piHostPart.index !== pending.length)
          throw new Error("a context entry's parts arrived out of order");
        pending.push(m.piHostPart.json);
        if (m.piHostPart.index + 1 === m.piHostPart.count) {
          out.push(JSON.parse(pending.join("")));
          pending = [];
        }
      }
      return out;
    },
    /** Whether an entry still waits for parts. */
    partial(): boolean {
      return pending.length > 0;
    },
  };
}
