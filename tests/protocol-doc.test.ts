// docs/protocol.md is the contract: every method, event type and error code the code defines must
// appear in it (as `name` in backticks), so a change to the wire cannot skip the documentation.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "../services/protocol/error-codes.ts";
import { EVENT_TYPES } from "../services/protocol/events.ts";
import { AGENT_METHODS, CLIENT_METHODS } from "../services/protocol/subjects.ts";
import { REPO_ROOT } from "./support/processes.ts";

const doc = readFileSync(path.join(REPO_ROOT, "docs/protocol.md"), "utf8");
const documented = new Set([...doc.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]));

describe("docs/protocol.md", () => {
  it.each([
    ["client methods", [...CLIENT_METHODS]],
    ["agent-worker methods", [...AGENT_METHODS]],
    ["event types", [...EVENT_TYPES]],
    ["error codes", Object.values(ErrorCode)],
  ])("documents every %s", (_what, names) => {
    expect(names.filter((n) => !documented.has(n))).toEqual([]);
  });
});
