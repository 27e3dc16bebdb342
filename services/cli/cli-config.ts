// The CLI's configuration, read from the environment once per run. Pure: the caller passes the
// environment and the OS user name, so tests need neither.
import { DEFAULT_NATS_URL } from "../runtime/process-env.ts";
import { PREFIX_TOKEN, SUBJECT_TOKEN } from "../protocol/tokens.ts";
import { UsageError } from "./cli-error.ts";

export interface CliConfig {
  natsUrl: string;
  prefix: string;
  principal: string;
  natsUser: string | undefined;
  natsPassword: string | undefined;
}

export { DEFAULT_NATS_URL };
export const DEFAULT_PREFIX = "pi";
export const FALLBACK_PRINCIPAL = "dev";

/** The OS user name reduced to subject-token characters; "dev" when nothing usable is left. */
export function principalFromUserName(userName: string | undefined): string {
  const reduced = (userName ?? "").replace(/[^A-Za-z0-9_-]/g, "").slice(0, 64);
  return reduced.length > 0 ? reduced : FALLBACK_PRINCIPAL;
}

/**
 * Refuses (as a usage error) a prefix or principal that is not one subject token, since either would
 * change which subjects the CLI talks on rather than fail cleanly at the host.
 */
export function readCliConfig(env: NodeJS.ProcessEnv, osUserName: string | undefined): CliConfig {
  const prefix = env.PI_PREFIX || DEFAULT_PREFIX;
  if (!PREFIX_TOKEN.test(prefix)) {
    throw new UsageError(
      `PI_PREFIX must be one subject token ([A-Za-z0-9_-], at most 32), got ${JSON.stringify(prefix)}`,
    );
  }
  // With NATS credentials the principal is the NATS user: the server lets a person publish
  // requests only under their own name and read replies only under `_INBOX_<name>`.
  const natsUser = env.NATS_USER || undefined;
  const principal = env.PI_PRINCIPAL || natsUser || principalFromUserName(osUserName);
  if (natsUser && principal !== natsUser) {
    throw new UsageError(
      `PI_PRINCIPAL (${principal}) differs from NATS_USER (${natsUser}): the NATS server lets you act only as your NATS user; unset PI_PRINCIPAL`,
    );
  }
  if (!SUBJECT_TOKEN.test(principal)) {
    throw new UsageError(
      `PI_PRINCIPAL must be one subject token ([A-Za-z0-9_-], at most 64), got ${JSON.stringify(principal)}`,
    );
  }
  return {
    natsUrl: env.NATS_URL || DEFAULT_NATS_URL,
    prefix,
    principal,
    natsUser,
    natsPassword: env.NATS_PASSWORD || undefined,
  };
}
