import { describe, expect, it } from "vitest";
import { REDACTED } from "../runtime/secret-redaction.ts";
import { classifyProviderFailure } from "./provider-errors.ts";
import { providerTextRedactor, withoutProviderSecrets } from "./provider-text.ts";

const KEY = "local-key-7f2e9a41";
const HEADER = "gateway-secret-0451";
const redact = providerTextRedactor([KEY, HEADER, "ollama"]);

describe("a failed call's text leaves the worker without its secrets", () => {
  it("redacts errorMessage, diagnostics and ids of an assistant message; content stays the model's", () => {
    const content = [
      { type: "text", text: `Set api_key=${KEY.replace("7", "8")}1234567 in .env` },
      {
        type: "toolCall",
        id: "c1",
        name: "Write",
        arguments: { path: ".env", content: "token=abc123abc123abc123" },
      },
    ];
    const message = {
      role: "assistant",
      content,
      stopReason: "error",
      errorMessage: `401 Incorrect API key provided: ${KEY} (header ${HEADER})`,
      responseId: `resp_${HEADER}`,
      diagnostics: [
        {
          type: "provider_transport_failure",
          error: { message: `Bearer ${KEY}`, stack: `at x (${HEADER})` },
        },
      ],
      usage: { input: 1, output: 0 },
      timestamp: 5,
    };
    const before = JSON.stringify(message);
    const out = withoutProviderSecrets(message, redact);
    expect(JSON.stringify(message)).toBe(before);
    expect(JSON.stringify(out)).not.toContain(KEY);
    expect(JSON.stringify(out)).not.toContain(HEADER);
    expect(out).toEqual({
      ...message,
      errorMessage: `401 Incorrect API key provided: ${REDACTED} (header ${REDACTED})`,
      responseId: `resp_${REDACTED}`,
      diagnostics: [
        {
          type: "provider_transport_failure",
          error: { message: `Bearer ${REDACTED}`, stack: `at x (${REDACTED})` },
        },
      ],
    });
    expect(out.content).toBe(content);
  });

  it("a tool result is the host's and passes as it is", () => {
    const result = {
      role: "toolResult",
      toolCallId: "c1",
      content: [{ type: "text", text: KEY }],
      isError: false,
    };
    expect(withoutProviderSecrets(result, redact)).toBe(result);
  });

  it.each([
    [`401 Incorrect API key provided: Bearer sk-proj-${"A1b2".repeat(8)}`, "PROVIDER_UNAUTHORIZED"],
    [`403 {"error":{"message":"key ${KEY} may not use this model"}}`, "PROVIDER_UNAUTHORIZED"],
    [`429 Rate limit reached for key ${KEY}`, "PROVIDER_RATE_LIMITED"],
    [`400 This model's maximum context length is 8192 tokens (key ${KEY})`, "CONTEXT_TOO_LARGE"],
    [`500 upstream said x-gateway-secret=${HEADER}`, "PROVIDER_ERROR"],
    ["Connection error.", "PROVIDER_UNREACHABLE"],
  ])("%s is %s before and after redaction", (text, code) => {
    expect(classifyProviderFailure(text)).toBe(code);
    expect(redact(text)).not.toContain(KEY);
    expect(redact(text)).not.toContain(HEADER);
    expect(classifyProviderFailure(redact(text))).toBe(code);
  });
});
