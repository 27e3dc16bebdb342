// Issue #11 clause 6: outside development mode the host refuses a NATS server that does not check
// credentials (any connection could act as any person or worker), before it touches the database;
// against a server that does require them it starts. Each test runs its own nats-server.
import { afterEach, describe, expect, it } from "vitest";
import { hostEnv, spawnTs } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { startPrivateNats } from "./support/test-nats.ts";

const stack = useStack("natsauth", { emptyDatabase: true });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Production mode: credentials given, no PI_DEV_MODE. */
function productionEnv(natsUrl: string) {
  const env: Record<string, string | undefined> = {
    ...hostEnv(stack.env),
    NATS_URL: natsUrl,
    NATS_USER: "pihost",
    NATS_PASSWORD: "s3cret-for-the-test",
  };
  delete env.PI_DEV_MODE;
  delete env.PI_TEST_HOOKS;
  return env;
}

async function tables(): Promise<number> {
  const r = await stack.db.pool.query(
    "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'",
  );
  return r.rows[0].n;
}

describe("a production-mode host and NATS authentication", () => {
  it("refuses a NATS that checks no credentials: exits non-zero within seconds, names the fix, touches nothing", async () => {
    const open = await startPrivateNats();
    cleanups.push(open.stop);
    expect(await tables()).toBe(0);
    const t0 = Date.now();
    const host = spawnTs("services/host/main.ts", productionEnv(open.url));
    cleanups.push(() => host.kill());
    const refusal = await host.waitForEvent("host.nats_unauthenticated", 15_000);
    expect(String(refusal.message)).toMatch(/does not require authentication/);
    expect(String(refusal.message)).toMatch(/docs\/operations\.md|PI_DEV_MODE=1/);
    expect(await host.exited).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
    // Nothing was migrated, fenced or written.
    expect(await tables()).toBe(0);
  }, 30_000);

  it("starts against a NATS that requires the credentials it was given", async () => {
    const nats = await startPrivateNats({ user: "pihost", pass: "s3cret-for-the-test" });
    cleanups.push(nats.stop);
    const host = spawnTs("services/host/main.ts", productionEnv(nats.url));
    cleanups.push(() => host.stop());
    await host.waitForEvent("host.ready", 30_000);
    expect(host.lines.join("\n")).not.toContain("host.nats_unauthenticated");
  }, 45_000);
});
