// The scripted model provider (docs/protocol.md, "Shapes"): replays a session's script through pi-ai's faux provider,
// so the Agent streams text and tool calls exactly as from a real provider. No network, no keys.
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import path from "node:path";
import {
  type AssistantMessage,
  type Context,
  type FauxContentBlock,
  type FauxResponseFactory,
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  type Message,
  type Model,
  registerFauxProvider,
} from "@mariozechner/pi-ai";
import type { ScriptStep } from "../protocol/schemas.ts";

export const SCRIPTED_PROVIDER = "scripted";
export const DEMO_MODEL = "demo";
/** The answer to every model call after the last step of the script. */
export const SCRIPT_FINISHED_TEXT = "(script finished)";
const WAIT_POLL_MS = 25;

const DEMO_PLAN = [
  "# Add a greeting file",
  "",
  "## Steps",
  "1. Create `GREETING.md` in the workspace root.",
  '2. Write the single line "Hello from pi-host." into it.',
  "",
  "## Verification",
  "- Read `GREETING.md` back and check its content.",
  "",
].join("\n");

/**
 * The built-in script of model `scripted/demo`: a planning turn (steps 0-2: look around, `git status`
 * in the sandbox, submit a plan) and an execution turn (steps 3-4: write the file, report).
 */
export const DEMO_SCRIPT: readonly ScriptStep[] = Object.freeze([
  { toolCalls: [{ name: "Glob", args: { pattern: "**/*" } }] },
  { toolCalls: [{ name: "Bash", args: { command: "git status" } }] },
  {
    toolCalls: [
      {
        name: "ExitPlanMode",
        args: { title: "Add a greeting file", markdown: DEMO_PLAN, question: "Create GREETING.md?" },
      },
    ],
  },
  { toolCalls: [{ name: "Write", args: { path: "GREETING.md", content: "Hello from pi-host.\n" } }] },
  { text: "Done: GREETING.md is written." },
]);

/** One line of the call log (PI_SCRIPTED_CALL_LOG). */
export interface ScriptedCallLogLine {
  sessionId: string;
  turnId: string;
  step: number;
  tools: string[];
  systemPromptSha256: string;
  at: string;
}

export interface ScriptedModelOptions {
  sessionId: string;
  turnId: string;
  /** The model name of the session's config; shown on every assistant message. */
  modelId: string;
  script: readonly ScriptStep[];
  /** Absolute or cwd-relative path of the JSONL call log; undefined = no log. */
  callLogPath?: string | undefined;
}

export interface ScriptedModel {
  model: Model<string>;
  /** Removes the provider from pi-ai's global registry; call when the turn ends. */
  unregister(): void;
}

/**
 * The script a model config runs: its own script, else the demo script for model `demo`.
 * Returns null for another scripted model without a script (a configuration error).
 */
export function scriptFor(config: {
  model: string;
  script?: ScriptStep[] | undefined;
}): readonly ScriptStep[] | null {
  if (config.script) return config.script;
  if (config.model === DEMO_MODEL) return DEMO_SCRIPT;
  return null;
}

/** The step a model call answers: the number of assistant messages already in the context. */
export function scriptStepIndex(messages: readonly Pick<Message, "role">[]): number {
  let n = 0;
  for (const m of messages) if (m.role === "assistant") n++;
  return n;
}

/** The assistant reply for one step (tool calls make it a `toolUse` stop); past the end, fixed text. */
export function scriptedReply(stepIndex: number, step: ScriptStep | undefined): AssistantMessage {
  if (!step) return fauxAssistantMessage(SCRIPT_FINISHED_TEXT);
  const content: FauxContentBlock[] = [];
  if (step.text !== undefined) content.push(fauxText(step.text));
  const nonce = randomBytes(4).toString("hex");
  (step.toolCalls ?? []).forEach((call, i) => {
    content.push(
      fauxToolCall(call.name, structuredClone(call.args), { id: `toolu_s${stepIndex}_${i}_${nonce}` }),
    );
  });
  if (content.length === 0) content.push(fauxText(""));
  return fauxAssistantMessage(content, { stopReason: step.toolCalls?.length ? "toolUse" : "stop" });
}

/** Resolves true once `file` exists, or false as soon as `signal` aborts (polling ~25 ms). */
export function waitForFile(file: string, signal?: AbortSignal): Promise<boolean> {
  const target = path.resolve(file);
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    if (existsSync(target)) return resolve(true);
    const finish = (found: boolean) => {
      clearInterval(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(found);
    };
    const onAbort = () => finish(false);
    const timer = setInterval(() => {
      if (existsSync(target)) finish(true);
    }, WAIT_POLL_MS);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function callLogLine(opts: ScriptedModelOptions, step: number, context: Context): ScriptedCallLogLine {
  return {
    sessionId: opts.sessionId,
    turnId: opts.turnId,
    step,
    tools: (context.tools ?? []).map((t) => t.name),
    systemPromptSha256: createHash("sha256")
      .update(context.systemPrompt ?? "", "utf8")
      .digest("hex"),
    at: new Date().toISOString(),
  };
}

/**
 * Registers a faux provider that answers every call from `script`, under an api unique to this
 * turn so concurrent turns never share a queue. The step comes from the context, not from a
 * counter, so a session's script continues across turns and workers.
 */
export function createScriptedModel(opts: ScriptedModelOptions): ScriptedModel {
  const api = `scripted-${opts.turnId}-${randomBytes(4).toString("hex")}`;
  const registration = registerFauxProvider({
    api,
    provider: SCRIPTED_PROVIDER,
    models: [{ id: opts.modelId, name: `scripted ${opts.modelId}`, reasoning: false, input: ["text"] }],
  });
  const respond: FauxResponseFactory = async (context, options) => {
    // The faux queue is consumed per call: keep exactly one factory queued for the next call.
    registration.appendResponses([respond]);
    // Like a real provider, an aborted turn makes no call: nothing is logged or answered. pi's loop
    // asks for the next response even after an abort (e.g. the host was restarted mid-tool-call).
    if (options?.signal?.aborted)
      return fauxAssistantMessage("", { stopReason: "aborted", errorMessage: "aborted" });
    const step = scriptStepIndex(context.messages);
    if (opts.callLogPath) {
      await appendFile(opts.callLogPath, `${JSON.stringify(callLogLine(opts, step, context))}\n`, "utf8");
    }
    const entry = opts.script[step];
    // On abort the faux stream itself turns the reply into an `aborted` assistant message.
    if (entry?.waitForFile) await waitForFile(entry.waitForFile, options?.signal);
    return scriptedReply(step, entry);
  };
  registration.setResponses([respond]);
  return { model: registration.getModel(), unregister: registration.unregister };
}
