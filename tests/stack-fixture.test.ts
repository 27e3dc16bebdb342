// The stack fixture's own check: a stack that leaks a NATS subscription and a child process (or a
// pool client) fails its teardown naming them, and still closes them; a clean stack disposes quietly.
import { describe, expect, it } from "vitest";
import { mark, openSince } from "./support/leaks.ts";
import { openStack, useLeakCheck } from "./support/stack-fixture.ts";
import { spawnTs } from "./support/processes.ts";
import { databaseExists } from "./support/test-db.ts";

useLeakCheck("stack-fixture self-test");

describe("stack fixture teardown", () => {
  it("rejects naming a leaked subscription and a leaked child process, and closes both", async () => {
    const since = mark();
    const stack = await openStack("fixtureleak");
    const subject = `${stack.env.prefix}.leaked.subject`;
    stack.nc.subscribe(subject);
    const child = spawnTs("tests/support/idle-process.ts", {});
    await child.waitForEvent("idle.ready");

    const teardown = Promise.resolve(stack[Symbol.asyncDispose]());
    await expect(teardown).rejects.toThrow(/left 2 resource\(s\) open/);
    const message = await teardown.catch((e: Error) => e.message);
    expect(message).toContain(`NATS subscription ${subject}`);
    expect(message).toContain(`child process tests/support/idle-process.ts (pid ${child.child.pid})`);

    // The failed teardown still closed everything.
    expect(openSince(since).map((r) => `${r.kind} ${r.name()}`)).toEqual([]);
    expect(await child.exited).toBeNull();
    expect(child.child.signalCode).toBe("SIGKILL");
    expect(stack.nc.isClosed()).toBe(true);
    expect(await databaseExists(stack.db.name)).toBe(false);
  });

  it("names a pool client that was checked out and never released", async () => {
    const stack = await openStack("fixturepg");
    await stack.db.pool.connect();
    await expect(Promise.resolve(stack[Symbol.asyncDispose]())).rejects.toThrow(
      `left 1 resource(s) open at teardown: pg client 1 checked out of the pool of ${stack.db.name} and not released`,
    );
    expect(await databaseExists(stack.db.name)).toBe(false);
  });

  it("disposes a stack whose test closed what it opened", async () => {
    const stack = await openStack("fixtureclean");
    const sub = stack.nc.subscribe(`${stack.env.prefix}.closed.subject`);
    const child = spawnTs("tests/support/idle-process.ts", {});
    await child.waitForEvent("idle.ready");
    stack.events("s-1");
    sub.unsubscribe();
    await child.stop();
    await expect(stack[Symbol.asyncDispose]()).resolves.toBeUndefined();
    expect(await databaseExists(stack.db.name)).toBe(false);
  });

  it("counts a host started through the stack as the stack's own, not a leak", async () => {
    {
      await using stack = await openStack("fixturehost", { host: true });
      expect(stack.host?.child.exitCode).toBeNull();
    }
  });
});
