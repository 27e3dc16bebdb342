// The attack: a provider's 401 body echoes the worker's key and a configured header value (as some
// gateways do, "Incorrect API key provided: Bearer ..."). pi-ai really talks to local fakes of an
// OpenAI-compatible and an Anthropic server (tests/support/fake-providers.ts); neither value may reach
// the owner's or a second person's (an approver's) turn.ended, audit.list, the stored transcript,
// any other row, or a line the worker or the host writes. The turn still ends PROVIDER_UNAUTHORIZED.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REDACTED } from "../services/runtime/secret-redaction.ts";
import { type FakeProvider, startFakeAnthropic, startFakeOpenAI } from "./support/fake-providers.ts";
import { rows, turnEnded } from "./support/plans.ts";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const MODELS_DIR = mkdtempSync(path.join(os.tmpdir(), "pihost-secrets-"));
const MODELS_FILE = path.join(MODELS_DIR, "models.json");
// Fresh per run and shaped like no known credential: only the worker's configured values find them.
const KEY = `lk-${randomBytes(12).toString("hex")}`;
const HEADER_VALUE = `hv-${randomBytes(12).toString("hex")}`;
// A key of a known shape the worker was never given: the shapes remove it anyway.
const FOREIGN_KEY = `sk-proj-${randomBytes(18).toString("base64url")}`;
const SECRETS = [KEY, HEADER_VALUE, FOREIGN_KEY];
let openai: FakeProvider;
let anthropic: FakeProvider;

const stack = useStack("provsecrets", {
  extra: { PI_MODELS_JSON: MODELS_FILE, LEAKY_KEY: KEY, LEAKY_HEADER: HEADER_VALUE },
  host: true,
  worker: true,
  async prepare() {
    openai = await startFakeOpenAI();
    anthropic = await startFakeAnthropic();
    const provider = (baseUrl: string, api: string) => ({
      baseUrl,
      api,
      apiKey: "LEAKY_KEY",
      headers: { "x-gateway-secret": "LEAKY_HEADER" },
      models: [{ id: "m1" }],
    });
    const models = {
      providers: {
        "leaky-openai": provider(openai.baseUrl, "openai-completions"),
        "leaky-anthropic": provider(anthropic.baseUrl, "anthropic-messages"),
      },
    };
    writeFileSync(MODELS_FILE, JSON.stringify(models));
  },
});

afterAll(async () => {
  await Promise.all([openai?.close(), anthropic?.close()]);
  rmSync(MODELS_DIR, { recursive: true, force: true });
});

const CASES = [
  {
    api: "openai" as const,
    provider: "leaky-openai",
    body: {
      error: {
        message: `Incorrect API key provided: Bearer ${KEY}. Header x-gateway-secret was ${HEADER_VALUE}; did you mean ${FOREIGN_KEY}?`,
        type: "invalid_request_error",
        code: "invalid_api_key",
      },
    },
    // pi-ai's text is the SDK's "<status> <message>": only the secrets are gone from it.
    reason: `401 Incorrect API key provided: Bearer ${REDACTED}. Header x-gateway-secret was ${REDACTED}; did you mean ${REDACTED}?`,
  },
  {
    api: "anthropic" as const,
    provider: "leaky-anthropic",
    body: {
      type: "error",
      error: {
        type: "authentication_error",
        message: `invalid x-api-key ${KEY} (x-gateway-secret ${HEADER_VALUE})`,
      },
    },
    reason: `401 ${JSON.stringify({ type: "error", error: { type: "authentication_error", message: `invalid x-api-key ${REDACTED} (x-gateway-secret ${REDACTED})` } })}`,
  },
];

/** Fails naming where a secret was found. */
function expectNoSecret(where: string, text: string): void {
  for (const secret of SECRETS) expect(text.includes(secret), `${where} holds ${secret}`).toBe(false);
}

/** Every row of every table of the stack's database, as text. */
async function wholeDatabase(): Promise<string> {
  const tables = await rows<{ tablename: string }>(
    stack,
    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
  );
  const dumps: string[] = [];
  for (const { tablename } of tables) {
    const [row] = await rows<{ dump: string | null }>(
      stack,
      `SELECT string_agg(t::text, E'\\n') AS dump FROM "${tablename}" t`,
    );
    dumps.push(`${tablename}: ${row?.dump ?? ""}`);
  }
  return dumps.join("\n");
}

describe("a provider's 401 echoing the worker's key and header value", () => {
  it.each(CASES)(
    "$api: neither value reaches the owner, an approver, the audit, the rows or the logs",
    async ({ api, provider, body, reason }) => {
      const fake = api === "openai" ? openai : anthropic;
      const alice = stack.client("alice");
      const ws = stack.newWorkspace(`leak-${api}`);
      const project = await alice.call("projects.create", {
        name: `leak-${api}`,
        workspaceRoot: ws,
      });
      await addMembers(stack, project.id, ["carol"]);
      const session = await alice.call("session.create", {
        projectId: project.id,
        mode: "agent",
        model: { provider, model: "m1" },
        approvers: ["carol"],
      });
      const owner = stack.events(session.id, "alice");
      const approver = stack.events(session.id, "carol");
      const before = fake.requests.length;
      fake.reply({ kind: "error", status: 401, body });
      const { turnId } = await alice.call("session.prompt", {
        sessionId: session.id,
        text: "Hi",
      });
      const [ownerEnd, approverEnd] = await Promise.all([
        turnEnded(owner, turnId),
        turnEnded(approver, turnId),
      ]);
      owner.stop();
      approver.stop();

      // The worker really had both values: the server received them (and echoed them back).
      const [request, ...more] = fake.requests.slice(before);
      expect(more).toEqual([]);
      if (api === "openai") expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
      else expect(request!.headers["x-api-key"]).toBe(KEY);
      expect(request!.headers["x-gateway-secret"]).toBe(HEADER_VALUE);

      // Both people see the same end, its code, and the provider's words without the secrets.
      for (const ended of [ownerEnd, approverEnd])
        expect(ended).toMatchObject({ status: "error", code: "PROVIDER_UNAUTHORIZED", reason });
      expectNoSecret("the owner's events", JSON.stringify(owner.all));
      expectNoSecret("the approver's events", JSON.stringify(approver.all));

      for (const principal of ["alice", "carol"]) {
        const page = await stack.client(principal).call("audit.list", { sessionId: session.id });
        const end = page.entries.find((e) => e.action === "turn.end");
        expect(end, `${principal} reads the turn's end`).toMatchObject({ code: "PROVIDER_UNAUTHORIZED" });
        expect(JSON.stringify(end)).toContain(REDACTED);
        expectNoSecret(`${principal}'s audit.list`, JSON.stringify(page));
      }

      // The failed assistant message is stored, its errorMessage redacted like the reason.
      const transcript = await rows<{ message: Record<string, unknown> }>(
        stack,
        "SELECT message FROM transcript_entries WHERE session_id = $1 ORDER BY id",
        [session.id],
      );
      const failed = transcript.map((r) => r.message).find((m) => m.stopReason === "error");
      expect(failed?.errorMessage).toBe(reason);
      expectNoSecret("transcript_entries", JSON.stringify(transcript));
      expectNoSecret("the database", await wholeDatabase());

      // The worker logged the end (so its lines are the ones read), and no line of either process holds a value.
      const workerLines = stack.worker!.lines;
      expect(workerLines.some((l) => l.includes('"event":"turn.ended"') && l.includes(turnId))).toBe(true);
      expectNoSecret("the worker's log", workerLines.join("\n"));
      expectNoSecret("the host's log", stack.host!.lines.join("\n"));
      const messages = owner.all.filter(isEvent("message"));
      expect(messages).toEqual([]);
    },
    30_000,
  );
});
