// `npm run host:create-db`: creates the host's database on a server (PI_ADMIN_DATABASE_URL, a URL of
// any database there; default the local Postgres) unless it exists. Exit 0 done, 1 with the reason.
import { ensureDatabase } from "./store/create-database.ts";

const adminUrl = process.env.PI_ADMIN_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const name = process.env.PI_DATABASE_NAME || "pihost";
const timeoutMs =
  Number(process.env.PI_ADMIN_TIMEOUT_MS) > 0 ? Number(process.env.PI_ADMIN_TIMEOUT_MS) : 5_000;

ensureDatabase(adminUrl, name, timeoutMs).then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
