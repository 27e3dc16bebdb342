// Local stand-ins for model providers: an OpenAI chat-completions server and an Anthropic messages
// server on free loopback ports, each answering from a queue of scripted replies and recording
// every request body. Nothing here knows pi-host; tests point a models.json at `baseUrl`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";

/** A streamed text answer: chunks sent one by one, each after its optional delay. */
export interface TextReply {
  kind: "text";
  chunks: string[];
  delayMs?: number;
}

/** One tool call (streamed as two argument fragments), then a tool-use stop. */
export interface ToolCallReply {
  kind: "toolCall";
  name: string;
  args: Record<string, unknown>;
  id?: string;
}

/** A plain HTTP error: this status, headers and body, no stream. */
export interface ErrorReply {
  kind: "error";
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export type FakeReply = TextReply | ToolCallReply | ErrorReply;

export interface RecordedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

export interface FakeProvider {
  /** What a models.json `baseUrl` names (OpenAI: `.../v1`; Anthropic: the origin). */
  baseUrl: string;
  port: number;
  requests: RecordedRequest[];
  /** Queues replies; a request finding the queue empty gets a 500 saying so. */
  reply(...replies: FakeReply[]): void;
  close(): Promise<void>;
}

const USAGE = { input: 11, output: 7 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      data += c;
    });
    req.on("end", () => resolve(data));
    req.on("error", reject);
  });
}

function sendError(res: ServerResponse, reply: ErrorReply): void {
  res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
  res.end(typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
}

type Streamer = (res: ServerResponse, reply: TextReply | ToolCallReply, model: string) => Promise<void>;

async function startFake(route: string, baseSuffix: string, stream: Streamer): Promise<FakeProvider> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {}
      requests.push({ path: req.url ?? "", headers: req.headers, body });
      if (req.method !== "POST" || req.url !== route) {
        sendError(res, { kind: "error", status: 404, body: { error: { message: `no route ${req.url}` } } });
        return;
      }
      const reply = queue.shift();
      if (!reply) {
        sendError(res, {
          kind: "error",
          status: 500,
          body: { error: { message: "fake: reply queue empty" } },
        });
        return;
      }
      if (reply.kind === "error") return sendError(res, reply);
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      await stream(res, reply, String(body.model ?? ""));
      res.end();
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}${baseSuffix}`,
    port,
    requests,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Splits a JSON text in two fragments, as providers stream tool arguments. */
function halves(json: string): [string, string] {
  const mid = Math.floor(json.length / 2);
  return [json.slice(0, mid), json.slice(mid)];
}

/** `POST /v1/chat/completions`, streamed as chat.completion.chunk SSE lines ending in `[DONE]`. */
export function startFakeOpenAI(): Promise<FakeProvider> {
  return startFake("/v1/chat/completions", "/v1", async (res, reply, model) => {
    const id = `chatcmpl-${Date.now()}`;
    const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model, choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`,
      );
    chunk({ delta: { role: "assistant", content: "" }, finish_reason: null });
    if (reply.kind === "text") {
      for (const text of reply.chunks) {
        if (reply.delayMs) await sleep(reply.delayMs);
        chunk({ delta: { content: text }, finish_reason: null });
      }
      chunk({ delta: {}, finish_reason: "stop" });
    } else {
      const [a, b] = halves(JSON.stringify(reply.args));
      const callId = reply.id ?? `call_${Date.now()}`;
      chunk({
        delta: {
          tool_calls: [
            { index: 0, id: callId, type: "function", function: { name: reply.name, arguments: a } },
          ],
        },
        finish_reason: null,
      });
      chunk({ delta: { tool_calls: [{ index: 0, function: { arguments: b } }] }, finish_reason: null });
      chunk({ delta: {}, finish_reason: "tool_calls" });
    }
    chunk(null, {
      usage: {
        prompt_tokens: USAGE.input,
        completion_tokens: USAGE.output,
        total_tokens: USAGE.input + USAGE.output,
      },
    });
    res.write("data: [DONE]\n\n");
  });
}

/** `POST /v1/messages`, streamed as Anthropic message events. */
export function startFakeAnthropic(): Promise<FakeProvider> {
  return startFake("/v1/messages", "", async (res, reply, model) => {
    const event = (type: string, data: Record<string, unknown>) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event("message_start", {
      message: {
        id: `msg_${Date.now()}`,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: USAGE.input, output_tokens: 1 },
      },
    });
    if (reply.kind === "text") {
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
      for (const text of reply.chunks) {
        if (reply.delayMs) await sleep(reply.delayMs);
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text } });
      }
      event("content_block_stop", { index: 0 });
    } else {
      const [a, b] = halves(JSON.stringify(reply.args));
      event("content_block_start", {
        index: 0,
        content_block: {
          type: "tool_use",
          id: reply.id ?? `toolu_${Date.now()}`,
          name: reply.name,
          input: {},
        },
      });
      event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: a } });
      event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: b } });
      event("content_block_stop", { index: 0 });
    }
    event("message_delta", {
      delta: { stop_reason: reply.kind === "text" ? "end_turn" : "tool_use", stop_sequence: null },
      usage: { output_tokens: USAGE.output },
    });
    event("message_stop", {});
  });
}

/**
 * For the calling test file: a fake OpenAI-compatible server and a models.json (in a temporary
 * folder, removed after the file) naming it as provider `local-openai` with model `m1`, key `k`.
 * `file` is known at once (give it to the workers as PI_MODELS_JSON); `start()` (in a stack's
 * `prepare`) starts the server and writes the file; `openai()` is the server.
 */
export function useFakeOpenAIModels(): { file: string; start(): Promise<void>; openai(): FakeProvider } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-models-"));
  const file = path.join(dir, "models.json");
  let server: FakeProvider | undefined;
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    file,
    async start() {
      server = await startFakeOpenAI();
      const provider = {
        baseUrl: server.baseUrl,
        api: "openai-completions",
        apiKey: "k",
        models: [{ id: "m1" }],
      };
      writeFileSync(file, JSON.stringify({ providers: { "local-openai": provider } }));
    },
    openai() {
      if (!server) throw new Error("useFakeOpenAIModels: start() has not run");
      return server;
    },
  };
}
