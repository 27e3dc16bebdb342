// A backend terminated as it connects must not end the host. A proxy in front of the real Postgres
// appends a FATAL (57P01, what pg_terminate_backend sends) to the same read as the server's first
// ReadyForQuery: the client learns it is connected and terminated at once. The workspace lock's pool
// must refuse that hold (its query fails) and never emit an 'error' no one listens to, which would
// crash the process (a clean-clone CI lost its host this way under tests/host-invariants.test.ts).
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspaceAdvisoryLocks } from "../services/host/store/workspace-advisory-lock.ts";
import { ADMIN_URL } from "./support/test-db.ts";

/** An ErrorResponse: FATAL 57P01 "terminating connection due to administrator command". */
function fatalTerminated(): Buffer {
  const fields = Buffer.concat([
    Buffer.from("SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0", "utf8"),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

let proxy: net.Server;
let port = 0;
const target = new URL(ADMIN_URL);

beforeAll(async () => {
  proxy = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    client.pipe(server);
    let pending = Buffer.alloc(0);
    let done = false;
    server.on("data", (chunk: Buffer) => {
      if (done) return;
      pending = Buffer.concat([pending, chunk]);
      // Server messages: a type byte and a length that counts itself; forward up to the first Z.
      let at = 0;
      while (pending.length - at >= 5) {
        const len = pending.readInt32BE(at + 1);
        if (pending.length - at < 1 + len) break;
        const type = String.fromCharCode(pending[at]!);
        at += 1 + len;
        if (type === "Z") {
          done = true;
          client.end(Buffer.concat([pending.subarray(0, at), fatalTerminated()]));
          server.destroy();
          return;
        }
      }
    });
    server.on("error", () => client.destroy());
    client.on("error", () => server.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  port = (proxy.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => proxy.close(r));
});

describe("a workspace lock whose backend is terminated as it connects", () => {
  it("fails that hold and leaves the process up", async () => {
    const url = new URL(ADMIN_URL);
    url.host = `127.0.0.1:${port}`;
    const locks = createWorkspaceAdvisoryLocks(url.toString());
    let ran = false;
    const outcome = await locks
      .hold("/ws/terminated", async () => {
        ran = true;
      })
      .then(
        () => "held",
        (err: Error) => err.message,
      );
    expect(ran).toBe(false);
    expect(outcome).not.toBe("held");
    // A moment for any stray 'error' event to surface (vitest fails the run on one).
    await new Promise((r) => setTimeout(r, 200));
    await locks.close();
  });
});
