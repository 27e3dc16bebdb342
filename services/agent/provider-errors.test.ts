import { describe, expect, it } from "vitest";
import { classifyProviderFailure, type ProviderFailureCode } from "./provider-errors.ts";

// Each text is what pi-ai 0.73.1 put in `errorMessage` when it called tests/support/fake-providers.ts
// answering with that status and a body shaped like the real provider's (see docs/models.md).
const OBSERVED: Array<[string, string, ProviderFailureCode]> = [
  ["openai 401", "401 Incorrect API key provided: sk-bad.", "PROVIDER_UNAUTHORIZED"],
  ["openai 403", "403 Project does not have access to model m1", "PROVIDER_UNAUTHORIZED"],
  ["openai 429 (retry-after: 1)", "429 Rate limit reached for requests", "PROVIDER_RATE_LIMITED"],
  ["openai 500", "500 The server had an error while processing your request.", "PROVIDER_ERROR"],
  [
    "openai 400 context_length_exceeded",
    "400 This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
    "CONTEXT_TOO_LARGE",
  ],
  ["openai refused", "Connection error.", "PROVIDER_UNREACHABLE"],
  [
    "anthropic 401",
    '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    "PROVIDER_UNAUTHORIZED",
  ],
  [
    "anthropic 403",
    '403 {"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}',
    "PROVIDER_UNAUTHORIZED",
  ],
  [
    "anthropic 429 (retry-after: 1)",
    '429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}',
    "PROVIDER_RATE_LIMITED",
  ],
  [
    "anthropic 500",
    '500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}',
    "PROVIDER_ERROR",
  ],
  [
    "anthropic 529",
    '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "PROVIDER_ERROR",
  ],
  [
    "anthropic 400 prompt too long",
    '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}',
    "CONTEXT_TOO_LARGE",
  ],
  ["anthropic refused", "Connection error.", "PROVIDER_UNREACHABLE"],
];

// Texts of the SDKs and pi-ai read from their sources (not produced against the fakes).
const FROM_SOURCES: Array<[string, string, ProviderFailureCode]> = [
  ["SDK timeout", "Request timed out.", "PROVIDER_UNREACHABLE"],
  ["pi-ai without a key", "No API key for provider: local-openai", "PROVIDER_UNAUTHORIZED"],
  ["502 without a body", "502 status code (no body)", "PROVIDER_ERROR"],
  ["400 without a body is no overflow guess", "400 status code (no body)", "PROVIDER_ERROR"],
  [
    "llama.cpp overflow",
    "400 the request exceeds the available context size, try increasing it",
    "CONTEXT_TOO_LARGE",
  ],
  [
    "throttling that mentions tokens",
    "ThrottlingException: Too many tokens, please wait before trying again.",
    "PROVIDER_RATE_LIMITED",
  ],
  ["finish reason", "Provider finish_reason: content_filter", "PROVIDER_ERROR"],
  ["empty", "", "PROVIDER_ERROR"],
  [
    "a status-prefixed text naming a connection error stays a status",
    "500 Connection error.",
    "PROVIDER_ERROR",
  ],
];

describe("classifyProviderFailure", () => {
  it.each(OBSERVED)("%s (observed): %s", (_label, text, code) => {
    expect(classifyProviderFailure(text)).toBe(code);
  });
  it.each(FROM_SOURCES)("%s: %s", (_label, text, code) => {
    expect(classifyProviderFailure(text)).toBe(code);
  });
});
