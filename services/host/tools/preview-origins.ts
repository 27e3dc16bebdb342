// Where a BrowserPreview URL may go (docs/protocol.md "BrowserPreview"): loopback is the browser
// sandbox's own (its network namespace has an empty loopback), listed origins are fetched by the host,
// workspace files are read through Read's confinement, pi-host's own listeners never. Pure URL and
// address decisions; nothing here fetches.
import { fileURLToPath } from "node:url";
import { isIPv4, isIPv6 } from "node:net";
import { AppError } from "../../protocol/app-error.ts";

/** A preview's page: loopback in the browser's sandbox, a listed origin the host fetches, a workspace file. */
export type PreviewTarget =
  | { kind: "sandbox"; url: string }
  | { kind: "fetched"; url: string }
  | { kind: "workspace"; rel: string };

const isHttp = (u: URL) => u.protocol === "http:" || u.protocol === "https:";

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted IPv4 part included). */
function ipv6Groups(a: string): number[] {
  let s = a;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted) {
    const [p, q, r, t] = dotted.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, dotted.index)}${((p << 8) | q).toString(16)}:${((r << 8) | t).toString(16)}`;
  }
  const [head = "", tail] = s.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill("0"), ...t];
  return groups.map((g) => Number.parseInt(g, 16));
}

/**
 * Is this IP address the machine itself: loopback (127.0.0.0/8, ::1) or unspecified (0.0.0.0/8, ::,
 * which a connect() sends to the local host), also written as IPv6 (`::ffff:127.0.0.1`,
 * `::127.0.0.1`)? Brackets are allowed; a name is not an address (false).
 */
export function isHostItself(address: string): boolean {
  const a = address.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  let v4: number | null = null;
  if (isIPv4(a)) v4 = Number(a.split(".")[0]);
  else if (isIPv6(a)) {
    const g = ipv6Groups(a);
    // ::a.b.c.d and ::ffff:a.b.c.d (so :: and ::1 as 0.0.0.0 and 0.0.0.1) carry an IPv4 address.
    if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0 || g[5] === 0xffff)) v4 = g[6]! >> 8;
  }
  return v4 === 127 || v4 === 0;
}

/** Does this http(s) URL name the machine itself: `localhost`, `*.localhost` or a loopback address? */
export function isLoopbackUrl(u: URL): boolean {
  if (!isHttp(u)) return false;
  const host = u.hostname.toLowerCase().replace(/\.$/, "");
  return host === "localhost" || host.endsWith(".localhost") || isHostItself(host);
}

/** May the host fetch this URL for the page: one of the project's listed origins, never loopback. */
export function isFetchable(u: URL, allowedOrigins: readonly string[] = []): boolean {
  return isHttp(u) && !isLoopbackUrl(u) && allowedOrigins.includes(u.origin);
}

const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]"]);
const WILDCARD_HOSTS = new Set(["0.0.0.0", "[::]", "::"]);

/**
 * Does this URL reach one of these listeners (`host:port`)? A listener on a loopback or wildcard
 * address answers every loopback name on its port; any other is matched by host and port.
 */
export function reachesListener(u: URL, listeners: readonly string[]): boolean {
  if (!isHttp(u)) return false;
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return listeners.some((l) => {
    const at = l.lastIndexOf(":");
    if (at <= 0 || l.slice(at + 1) !== port) return false;
    const host = l.slice(0, at).toLowerCase();
    const name = host.startsWith("[") || !host.includes(":") ? host : `[${host}]`;
    if ((LOOPBACK_NAMES.has(name) || WILDCARD_HOSTS.has(name)) && isLoopbackUrl(u)) return true;
    return name === u.hostname.toLowerCase();
  });
}

/** Decides where a BrowserPreview URL may go; throws the refusal. */
export async function previewTarget(
  raw: string,
  ctx: {
    readWorkspaceFile: (p: string) => Promise<{ rel: string }>;
    allowedOrigins?: readonly string[] | undefined;
  },
  listeners: readonly string[] = [],
): Promise<PreviewTarget> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new AppError("INVALID_PARAMS", "url must be an absolute URL");
  }
  if (reachesListener(u, listeners))
    throw new AppError(
      "BROWSER_URL_NOT_ALLOWED",
      `${u.protocol}//${u.host} is a pi-host health and metrics listener: previews may not reach it`,
    );
  if (isLoopbackUrl(u)) return { kind: "sandbox", url: u.href };
  if (isFetchable(u, ctx.allowedOrigins)) return { kind: "fetched", url: u.href };
  if (u.protocol === "file:") {
    if (u.host && u.host !== "localhost")
      throw new AppError("BROWSER_URL_NOT_ALLOWED", "file URLs must not name a host");
    const { rel } = await ctx.readWorkspaceFile(fileURLToPath(u));
    return { kind: "workspace", rel };
  }
  throw new AppError(
    "BROWSER_URL_NOT_ALLOWED",
    `${u.protocol}//${u.host} is not allowed: only http(s) loopback URLs (the browser sandbox's own), workspace file:// URLs and the project's preview origins`,
  );
}
