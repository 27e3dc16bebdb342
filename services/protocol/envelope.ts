// Reply envelopes of the bus contract: {"result": ...} or {"error": {code, message, retriable, details}},
// and the JSON encoder and decoder every wire body goes through.
import { AppError, type WireError } from "./app-error.ts";

export type Reply<T> = { result: T } | { error: WireError };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Parses a JSON body; a body that is not JSON is INVALID_PARAMS. */
export function decodeJson(data: Uint8Array): unknown {
  if (data.length === 0) return {};
  try {
    return JSON.parse(decoder.decode(data));
  } catch (cause) {
    throw new AppError("INVALID_PARAMS", "body is not JSON", { cause });
  }
}

export function okReply<T>(result: T): Uint8Array {
  return encodeJson({ result });
}

/** The body of an error reply. Each process has one reply function that uses it (the host's: bus/reply.ts). */
export function errorBody(err: AppError): Uint8Array {
  return encodeJson({ error: err.toWire() });
}

/** Unwraps a reply: the result, or the AppError it carries. */
export function unwrapReply<T>(data: Uint8Array): T {
  const body = decodeJson(data) as Partial<{ result: T; error: unknown }> | null;
  if (body && typeof body === "object" && "error" in body) throw AppError.fromWire(body.error);
  if (body && typeof body === "object" && "result" in body) return body.result as T;
  throw new AppError("INTERNAL", "malformed reply");
}
