// The README's walk-through, run as written with `bash -euo pipefail` against a real host and agent
// worker (own database, own subject prefix), so the documented commands cannot drift from the CLI.
import { startHost, startWorker } from "../support/processes.ts";
import { describeWalkthrough } from "../support/walkthrough.ts";

describeWalkthrough("README walk-through", { host: startHost, worker: startWorker });
