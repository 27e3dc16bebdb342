// Start-up before anything is served (docs/architecture.md "Host start-up"): the database is
// checked and migrated, a live process of the same host id is waited out or refused
// (HOST_ID_IN_USE, exit 2), and the startup fence ends what an earlier incarnation left running.
// Then the writer pool carrying this incarnation, which refuses every write once it is superseded.
import type { Result } from "../../protocol/result.ts";
import type { Logger } from "../../runtime/log.ts";
import { errorFields } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../host-config.ts";
import { formatListenAddress } from "../http-listener.ts";
import { createHostMetrics } from "../metrics.ts";
import { createNotices } from "../sessions/events/notices.ts";
import { checkDatabase, createDb, type Db } from "../store/db.ts";
import { migrateUp } from "../store/migrate.ts";
import {
  awaitHostIdFree,
  countLeasesOwned,
  type FenceReport,
  runStartupFence,
} from "../store/startup-fence.ts";

/** Migrates and fences; a host id another live process holds exits 2 after `onInUse`. */
export async function migrateAndFence(deps: {
  config: HostConfig;
  clock: Clock;
  log: Logger;
  version: string;
  onInUse: () => Promise<void>;
}): Promise<FenceReport> {
  const { config, log } = deps;
  await checkDatabase(config.databaseUrl);
  const applied = await migrateUp({ databaseUrl: config.databaseUrl });
  log.info("host.migrated", { applied });
  // The fence runs on a pool of its own; every later write goes through the writer pool, which
  // carries this incarnation (a superseded incarnation cannot commit).
  const fenceDb = createDb(config.databaseUrl, { max: 2 });
  const fenced = await fenceOn(fenceDb, deps).finally(() => fenceDb.end().catch(() => {}));
  if (fenced.ok) return fenced.value;
  // Only HOST_ID_IN_USE is a refusal of the fence: another live process holds this id.
  log.error("host.id_in_use", { hostId: config.hostId, ...fenced.refusal });
  await deps.onInUse();
  process.exit(2);
}

async function fenceOn(
  fenceDb: Db,
  deps: { config: HostConfig; clock: Clock; log: Logger; version: string },
): Promise<Result<FenceReport>> {
  const { config, clock, log } = deps;
  // A `running` row of this id whose heartbeat moves within one lease is another live process.
  const seen = await awaitHostIdFree({
    db: fenceDb,
    clock,
    hostId: config.hostId,
    leaseMs: config.liveness.leaseMs,
    pollMs: config.liveness.heartbeatMs,
    log,
  });
  if (!seen.ok) return seen;
  // Started at the same moment as another process with this id, it is HOST_ID_IN_USE too (`seen`).
  return runStartupFence({
    db: fenceDb,
    clock,
    hostId: config.hostId,
    log,
    seen: seen.value,
    // The health and metrics listener is written here, so other hosts' previews block it too.
    info: {
      pid: process.pid,
      version: deps.version,
      ...(config.httpListen ? { http: formatListenAddress(config.httpListen) } : {}),
    },
  });
}

/**
 * The writer pool of this incarnation and the host's metrics (the fence is their first count).
 * `fenced` is told the first write the fence refused; the host stops serving then.
 */
export function openWriter(config: HostConfig, fence: FenceReport, log: Logger) {
  const notices = createNotices<{ fenced: string }>((_, err) =>
    log.error("host.notice_failed", errorFields(err)),
  );
  const db = createDb(config.databaseUrl, {
    writer: {
      hostId: config.hostId,
      incarnation: fence.incarnation,
      onFenced: (m) => notices.emit("fenced", m),
      // Half a lease: a paused host's open transaction ends before another host's takeover needs it.
      idleInTransactionMs: Math.max(500, Math.floor(config.liveness.leaseMs / 2)),
    },
  });
  const metrics = createHostMetrics({
    hostId: config.hostId,
    leasesOwned: () => countLeasesOwned(db, config.hostId),
  });
  metrics.fence();
  return { db, metrics, notices };
}
export type WriterParts = ReturnType<typeof openWriter>;
