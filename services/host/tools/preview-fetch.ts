// The host's fetch of a listed preview origin for a BrowserPreview page (docs/protocol.md
// "BrowserPreview"): one GET or HEAD, no redirect followed, the body cut at a bound, and never to the
// machine itself: a listed name that resolves to a loopback or unspecified address is refused at
// connect time (the address checked is the one connected to), so no DNS answer turns a listed origin
// into the host's loopback.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { isHostItself } from "./preview-origins.ts";

/** The refusal of a request whose address is the machine itself; the page sees it as blocked. */
export class HostItselfError extends Error {
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, the host itself: previews never reach the host's loopback`);
    this.name = "HostItselfError";
  }
}

/** dns.lookup, refusing (HostItselfError) when any address it returns is the machine itself. */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    const own = addresses.find((a) => isHostItself(a.address));
    if (own) return callback(new HostItselfError(hostname, own.address), "", 0);
    if (options.all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
    const first = addresses[0];
    if (!first)
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
    callback(null, first.address, first.family);
  });
};

const DROPPED_REQUEST = new Set(["host", "accept-encoding", "connection", "keep-alive", "content-length"]);
const DROPPED_RESPONSE = new Set([
  "content-encoding",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
]);

export interface Fetched {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** The body reached maxBytes and the connection was dropped: the rest was never read. */
  truncated: boolean;
}

/**
 * GET or HEAD `url` (a listed origin, checked by the caller) with the page's headers, at most
 * `maxBytes` of body within `timeoutMs`. Rejects with HostItselfError for the machine itself, and
 * with the network's error otherwise.
 */
export function fetchListed(
  url: string,
  method: string,
  pageHeaders: Record<string, string>,
  maxBytes: number,
  timeoutMs: number,
): Promise<Fetched> {
  const u = new URL(url);
  if (isHostItself(u.hostname)) return Promise.reject(new HostItselfError(u.hostname, u.hostname));
  const headers = Object.fromEntries(
    Object.entries(pageHeaders).filter(([k]) => !DROPPED_REQUEST.has(k.toLowerCase())),
  );
  const client = u.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void) => {
      if (!settled) {
        settled = true;
        fn();
      }
    };
    const req = client.request(
      u,
      { method, headers, lookup: guardedLookup, agent: false, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = (truncated: boolean) =>
          settle(() => {
            const out: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) {
              if (v === undefined || DROPPED_RESPONSE.has(k)) continue;
              out[k] = Array.isArray(v) ? v.join(k === "set-cookie" ? "\n" : ", ") : v;
            }
            resolve({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks), truncated });
          });
        res.on("data", (chunk: Buffer) => {
          if (settled) return;
          const part = chunk.subarray(0, maxBytes - size);
          chunks.push(part);
          size += part.length;
          if (size >= maxBytes) {
            done(true);
            req.destroy(); // nothing more is read
          }
        });
        res.on("end", () => done(false));
        res.on("error", (err) => settle(() => reject(err)));
      },
    );
    req.on("error", (err) => settle(() => reject(err)));
    req.end();
  });
}
