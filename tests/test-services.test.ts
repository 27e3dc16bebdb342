// The choice of the tests' Postgres and NATS (tests/support/test-services.ts), branch by branch: the
// environment, the local defaults, testcontainers with a Docker engine, or one message naming all three.
import { describe, expect, it } from "vitest";
import {
  LOCAL_DATABASE_URL,
  LOCAL_NATS_URL,
  planTestServices,
  resolveTestServices,
  type ServicesInput,
} from "./support/test-services.ts";

const ENV = { DATABASE_URL: "postgres://ci@db:5432/postgres", NATS_URL: "nats://bus:4222" };
const input = (over: Partial<ServicesInput>): ServicesInput => ({
  env: {},
  localAnswers: { postgres: false, nats: false },
  dockerReachable: false,
  ...over,
});

describe("planTestServices", () => {
  it("takes DATABASE_URL and NATS_URL first, whatever answers locally or runs containers", () => {
    for (const dockerReachable of [false, true])
      expect(
        planTestServices(input({ env: ENV, localAnswers: { postgres: true, nats: true }, dockerReachable })),
      ).toEqual({
        ok: true,
        plan: { postgres: { from: "env", url: ENV.DATABASE_URL }, nats: { from: "env", url: ENV.NATS_URL } },
      });
  });

  it("else the local defaults when they answer, even with a Docker engine", () => {
    expect(
      planTestServices(input({ localAnswers: { postgres: true, nats: true }, dockerReachable: true })),
    ).toEqual({
      ok: true,
      plan: {
        postgres: { from: "local", url: LOCAL_DATABASE_URL },
        nats: { from: "local", url: LOCAL_NATS_URL },
      },
    });
  });

  it("else containers when a Docker engine is reachable", () => {
    expect(planTestServices(input({ dockerReachable: true }))).toEqual({
      ok: true,
      plan: { postgres: { from: "container" }, nats: { from: "container" } },
    });
  });

  it("chooses each service on its own", () => {
    expect(
      planTestServices(
        input({
          env: { DATABASE_URL: ENV.DATABASE_URL },
          localAnswers: { postgres: false, nats: false },
          dockerReachable: true,
        }),
      ),
    ).toEqual({
      ok: true,
      plan: { postgres: { from: "env", url: ENV.DATABASE_URL }, nats: { from: "container" } },
    });
    expect(
      planTestServices(
        input({ env: { NATS_URL: ENV.NATS_URL }, localAnswers: { postgres: true, nats: false } }),
      ),
    ).toEqual({
      ok: true,
      plan: {
        postgres: { from: "local", url: LOCAL_DATABASE_URL },
        nats: { from: "env", url: ENV.NATS_URL },
      },
    });
  });

  it("else fails with one message naming what is missing and the three options", () => {
    const none = planTestServices(input({}));
    expect(none.ok).toBe(false);
    const message = none.ok ? "" : none.message;
    expect(message).toMatch(/^No Postgres and NATS for the tests\./);
    expect(message).toContain("set DATABASE_URL and NATS_URL");
    expect(message).toContain("Postgres on 127.0.0.1:5432 (user postgres");
    expect(message).toContain("NATS on\n     127.0.0.1:4222");
    expect(message).toContain("make a Docker engine reachable");
    expect(message).toContain("testcontainers");

    const natsOnly = planTestServices(input({ localAnswers: { postgres: true, nats: false } }));
    expect(natsOnly.ok ? "" : natsOnly.message).toMatch(/^No NATS for the tests\./);
  });
});

describe("resolveTestServices", () => {
  it("uses the environment without probing anything or starting a container", async () => {
    const s = await resolveTestServices(ENV);
    expect(s).toMatchObject({ databaseUrl: ENV.DATABASE_URL, natsUrl: ENV.NATS_URL });
    await s.stop();
  });

  it("with nothing answering and no engine, rejects with the message, asking Docker only then", async () => {
    const asked: string[] = [];
    const silent = (what: string) => async () => {
      asked.push(what);
      return false;
    };
    const probe = { postgres: silent("postgres"), nats: silent("nats"), docker: silent("docker") };
    await expect(resolveTestServices({}, probe)).rejects.toThrow(/^No Postgres and NATS for the tests\./);
    expect(asked).toEqual(["postgres", "nats", "docker"]);
    asked.length = 0;
    await expect(resolveTestServices(ENV, probe)).resolves.toMatchObject({ databaseUrl: ENV.DATABASE_URL });
    expect(asked).toEqual([]);
  });

  it("finds this machine's local Postgres and NATS", async () => {
    const s = await resolveTestServices({});
    expect(s.plan).toEqual({
      postgres: { from: "local", url: LOCAL_DATABASE_URL },
      nats: { from: "local", url: LOCAL_NATS_URL },
    });
    await s.stop();
  });
});
