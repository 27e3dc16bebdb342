// `pihost nats-config`: writes the production nats-server configuration and its secrets file from a
// team file (services/cli/nats-config.ts decides what each user may do). No NATS connection.
import { randomBytes } from "node:crypto";
import { open, readFile, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Command } from "commander";
import { UsageError } from "../cli-error.ts";
import { isJson, out, outJson, type Run } from "../cli-run.ts";
import { generateNatsConfig } from "../nats-config.ts";
import { DEFAULT_BCRYPT_COST, MIN_BCRYPT_COST, parseSecrets, parseTeam, type Secrets } from "../nats-team.ts";

const CONFIG_MODE = 0o640;
const SECRETS_MODE = 0o600;

/** Writes `text` next to `file` under a temporary name with `mode`, then renames it over `file`. */
async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(tmp, "wx", mode);
  try {
    await handle.writeFile(text, "utf8");
    await handle.chmod(mode); // the umask may have taken bits away
    await handle.sync();
    await handle.close();
    await rename(tmp, file);
  } catch (err) {
    await handle.close().catch(() => {});
    await rm(tmp, { force: true });
    throw err;
  }
}

async function readSecrets(file: string, given: string): Promise<Secrets | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new UsageError(`cannot read --secrets ${given}: ${(cause as Error).message}`);
  }
  return parseSecrets(text, given);
}

function parseCost(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < MIN_BCRYPT_COST || n > 31)
    throw new UsageError(
      `--bcrypt-cost must be a whole number from ${MIN_BCRYPT_COST} to 31, got ${JSON.stringify(value)}`,
    );
  return n;
}

const names = (xs: string[]) => (xs.length ? xs.join(", ") : "none");

export function addNatsConfigCommand(program: Command, run: Run): void {
  program
    .command("nats-config")
    .description(
      "write the production nats-server configuration (bcrypt hashes only) and the users' passwords from a team file",
    )
    .requiredOption(
      "--users <team.yaml>",
      "the team file: hosts, workers, plugins, people (infra/team.example.yaml)",
    )
    .requiredOption(
      "--out <nats.conf>",
      "the configuration to write (mode 0640); - prints it, the summary goes to stderr",
    )
    .requiredOption(
      "--secrets <secrets.json>",
      "the passwords, read if it exists and rewritten (mode 0600): existing users keep theirs",
    )
    .option(
      "--bcrypt-cost <n>",
      `bcrypt cost of the password hashes (${MIN_BCRYPT_COST}-31)`,
      String(DEFAULT_BCRYPT_COST),
    )
    .action(
      async (opts: { users: string; out: string; secrets: string; bcryptCost: string }, cmd: Command) => {
        const cost = parseCost(opts.bcryptCost);
        const cwd = run.deps.cwd;
        const teamFile = path.resolve(cwd, opts.users);
        const outFile = opts.out === "-" ? "-" : path.resolve(cwd, opts.out);
        const secretsFile = path.resolve(cwd, opts.secrets);
        if (opts.secrets === "-")
          throw new UsageError("--secrets needs a file: the passwords are never printed");
        if (outFile === secretsFile || outFile === teamFile || secretsFile === teamFile)
          throw new UsageError("--users, --out and --secrets must be three different files");

        let teamText: string;
        try {
          teamText = await readFile(teamFile, "utf8");
        } catch (cause) {
          throw new UsageError(`cannot read --users ${opts.users}: ${(cause as Error).message}`);
        }
        const team = parseTeam(teamText, opts.users);
        const secrets = await readSecrets(secretsFile, opts.secrets);
        const r = generateNatsConfig(team, { ...(secrets ? { secrets } : {}), bcryptCost: cost });

        // Secrets first: a configuration whose new passwords nobody kept would lock those users out.
        await writeAtomically(secretsFile, `${JSON.stringify(r.secrets, null, 2)}\n`, SECRETS_MODE).catch(
          (cause: Error) => {
            throw new UsageError(`cannot write --secrets ${opts.secrets}: ${cause.message}`);
          },
        );
        if (outFile === "-") run.deps.stdout(r.config);
        else
          await writeAtomically(outFile, r.config, CONFIG_MODE).catch((cause: Error) => {
            throw new UsageError(
              `cannot write --out ${opts.out}: ${cause.message} (the secrets file is written; run the command again)`,
            );
          });

        const summary = {
          config: outFile,
          secrets: secretsFile,
          created: r.created,
          kept: r.kept,
          removed: r.removed,
        };
        // With --out -, stdout carries only the configuration.
        const report: Run =
          outFile === "-" ? { ...run, deps: { ...run.deps, stdout: (t) => run.deps.stderr(t) } } : run;
        if (isJson(cmd)) outJson(report, summary);
        else
          out(report, [
            `created ${r.created.length}: ${names(r.created)}`,
            `kept ${r.kept.length}: ${names(r.kept)}`,
            `removed ${r.removed.length}: ${names(r.removed)}`,
            `wrote ${outFile === "-" ? "the configuration to stdout" : `${outFile} (mode 0640)`} and ${secretsFile} (mode 0600, the passwords: keep it private)`,
            ...(team.jetstream.storeDir === undefined
              ? [
                  "JetStream stores in nats-server's temporary folder: set jetstream.storeDir or add -sd <dir>",
                ]
              : []),
            `run: nats-server -c ${outFile === "-" ? "<file>" : outFile}`,
          ]);
      },
    );
}
