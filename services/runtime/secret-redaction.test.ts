import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MIN_SECRET_CHARS, REDACTED, redactNamedValue, redactSecrets } from "./secret-redaction.ts";

// Made-up credentials of the real shapes (none of them was ever issued).
const R = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6";
const HEX = "3f9a1c0e7b2d4f6a8c1e3b5d7f9a0c2e";

describe("credential shapes are removed whoever configured them", () => {
  it.each([
    ["an OpenAI key", `Incorrect API key provided: sk-${R}.`, `Incorrect API key provided: ${REDACTED}.`],
    ["an OpenAI project key", `key sk-proj-${R}_${R} was revoked`, `key ${REDACTED} was revoked`],
    ["a service-account key", `sk-svcacct-${R}`, REDACTED],
    ["an Anthropic key", `"x-api-key":"sk-ant-api03-${R}-${R}AA"`, `"x-api-key":"${REDACTED}"`],
    ["a Bearer token", `Authorization: Bearer ${R}`, `Authorization: Bearer ${REDACTED}`],
    ["a Bearer token ending a sentence", `provided: Bearer ${R}. Next`, `provided: Bearer ${REDACTED}. Next`],
    ["a named value ending a sentence", `the token=${HEX}...`, `the token=${REDACTED}...`],
    ["a short Bearer token with a digit", "bearer abc12345 refused", `bearer ${REDACTED} refused`],
    ["a Bearer JWT", `Bearer eyJhbGciOi.${R}.${R}-_x==`, `Bearer ${REDACTED}`],
    [
      "a Bearer echo of an OpenAI key",
      `Incorrect API key provided: Bearer sk-${R}`,
      `Incorrect API key provided: Bearer ${REDACTED}`,
    ],
    ["an AWS access key id", "id AKIAIOSFODNN7EXAMPLE denied", `id ${REDACTED} denied`],
    ["a temporary AWS key id", "ASIAY34FZKBOKMUTVV7A", REDACTED],
    ["a GitHub personal token", `ghp_${R}`, REDACTED],
    ["a GitHub OAuth token", `token=gho_${R}&x=1`, `token=${REDACTED}&x=1`],
    ["a GitHub app token", `(ghs_${R})`, `(${REDACTED})`],
    ["a fine-grained GitHub token", `github_pat_11ABCDEFG0_${R}`, REDACTED],
    ["a Slack bot token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", REDACTED],
    ["a Slack user token", "xoxp-1234567890-abcdefghij", REDACTED],
    ["a Slack app token", "xoxa-2-1234567890-abcdef", REDACTED],
    ["a Google API key", `key AIzaSyA-${R.slice(0, 31)} is invalid`, `key ${REDACTED} is invalid`],
    ["a Stripe key", `sk_live_${R}`, REDACTED],
    ["api_key= in a URL", `GET /v1/x?api_key=${HEX}&q=1`, `GET /v1/x?api_key=${REDACTED}&q=1`],
    ["a JSON token field", `{"token": "${R}"}`, `{"token": "${REDACTED}"}`],
    [
      "an escaped JSON secret field",
      `{\\"client_secret\\":\\"${HEX}\\"}`,
      `{\\"client_secret\\":\\"${REDACTED}\\"}`,
    ],
    ["a password assignment", "password = 'hunter2hunter2hunter2'", `password = '${REDACTED}'`],
    ["an environment line", `GATEWAY_SECRET=${HEX}`, `GATEWAY_SECRET=${REDACTED}`],
    ["a header line", `x-api-key: ${HEX}`, `x-api-key: ${REDACTED}`],
  ])("%s", (_name, text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
  });
});

describe("nothing else is changed", () => {
  it.each([
    "401 Incorrect API key provided: ollama.",
    "429 Rate limit reached for requests",
    "400 This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    "Connection error.",
    "aborted: cancelled by the host",
    "no API key for provider local in the agent worker's configuration (apiKey in PI_MODELS_JSON, or the provider's usual environment variable)",
    "PI_MODELS_JSON (/etc/pi-host/models.json): providers.vault.apiKey: pi's command form (!command) is not supported",
    "Bearer authentication is required; send a Bearer token",
    "const token = readTokenFromEnvironment();\nconst apiKey = process.env.OPENAI_API_KEY;",
    "password: correcthorsebatterystaple",
    "key_file=/etc/pi-host/keys/team1.pem",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "/work/wt-secrets/services/protocol/secret-redaction.ts:42:7",
    "C:\\Users\\alice\\secrets\\notes.txt",
    "use scikit-learn, a task-manager and disk-usage-monitoring-service-v2",
    "commit 3f9a1c0e7b2d4f6a8c1e3b5d7f9a0c2e4b6d8f0a touched 12 files",
    "session ses_4f2a91bc, turn turn_ses_4f2a91bc_3, request rid_Zm9vYmFyYmF6cXV4",
    "AKIA is a prefix; AKIAshort is not a key",
    "emoji \ud83d\ude00 and \u0001 control characters",
    "",
  ])("%j", (text) => {
    expect(redactSecrets(text)).toBe(text);
    expect(redactSecrets(text, ["ollama", "k", "short1"])).toBe(text);
  });

  it("any text without a shape or a configured value comes back as it was", () => {
    // Lowercase words and punctuation can form no shape (shapes need a prefix and a long run).
    const word = fc.stringMatching(/^[a-z]{1,7}$/);
    const sep = fc.constantFrom(" ", ", ", ". ", "\n", "/", ":", "=");
    fc.assert(
      fc.property(fc.array(fc.tuple(word, sep)), (parts) => {
        const text = parts.map(([w, s]) => w + s).join("");
        expect(redactSecrets(text, ["configured-value-1"])).toBe(text);
      }),
    );
  });
});

describe("configured values", () => {
  const key = "k3y-local-7f2e9a";
  const header = "team-gateway-0451";

  it("removes each value wherever it stands, however often, and leaves the words around it", () => {
    const text = `401 Incorrect API key provided: ${key}. Header was ${header}; again:${key}${header}`;
    expect(redactSecrets(text, [key, header])).toBe(
      `401 Incorrect API key provided: ${REDACTED}. Header was ${REDACTED}; again:${REDACTED}`,
    );
  });

  it("finds a value in its JSON-escaped and URL-encoded forms", () => {
    const odd = 'pa"ss\\word/+ 9';
    const json = JSON.stringify({ message: `bad key ${odd}` });
    expect(redactSecrets(json, [odd])).toBe(
      JSON.stringify({ message: "bad key " }).replace('"}', `${REDACTED}"}`),
    );
    expect(redactSecrets(`https://x.test/?k=${encodeURIComponent(odd)}`, [odd])).toBe(
      `https://x.test/?k=${REDACTED}`,
    );
  });

  it("two values that overlap in the text leave no piece of either", () => {
    const a = "abcd1234efgh";
    const b = "efgh5678ijkl";
    const text = "xx abcd1234efgh5678ijkl yy";
    expect(redactSecrets(text, [a, b])).toBe(`xx ${REDACTED} yy`);
  });

  it("a value inside a credential shape takes the whole credential with it", () => {
    expect(redactSecrets(`Authorization: Bearer ${header}x9y8z7`, [header])).toBe(
      `Authorization: Bearer ${REDACTED}`,
    );
    expect(redactSecrets(`sk-${header}${"Q".repeat(10)} and ${header}`, [header])).toBe(
      `${REDACTED} and ${REDACTED}`,
    );
  });

  it(`ignores values under ${MIN_SECRET_CHARS} characters (trimmed), and undefined ones`, () => {
    const text = "ollama says: the key platform   is wrong";
    expect(redactSecrets(text, ["ollama", "   platf  ", undefined, "k"])).toBe(text);
    expect(redactSecrets(text, ["platform"])).toBe(`ollama says: the key ${REDACTED}   is wrong`);
  });

  it("no configured value survives, and redacting twice changes nothing more", () => {
    const secret = fc
      .string({ minLength: MIN_SECRET_CHARS, maxLength: 40 })
      .filter((s) => s.trim().length >= MIN_SECRET_CHARS && !s.includes("[") && !s.includes("]"));
    fc.assert(
      fc.property(
        fc.array(secret, { minLength: 1, maxLength: 3 }),
        fc.array(fc.string()),
        (secrets, noise) => {
          const text = noise.map((n, i) => n + secrets[i % secrets.length]).join("") + secrets[0];
          const out = redactSecrets(text, secrets);
          for (const s of secrets) expect(out).not.toContain(s);
          expect(redactSecrets(out, secrets)).toBe(out);
        },
      ),
    );
  });
});

describe("named values (log fields)", () => {
  it("a field named like a secret is redacted whole when its value looks like one", () => {
    expect(redactNamedValue("token", `tok_${R}`)).toBe(REDACTED);
    expect(redactNamedValue("apiKey", HEX)).toBe(REDACTED);
    expect(redactNamedValue("natsPassword", "s3cr3t-passw0rd-long")).toBe(REDACTED);
    expect(redactNamedValue("token", "short")).toBe("short");
    expect(redactNamedValue("tokens", HEX)).toBe(HEX);
    expect(redactNamedValue("event", "turn.ended")).toBe("turn.ended");
    expect(redactNamedValue("error", `401 bad key sk-${R}`)).toBe(`401 bad key ${REDACTED}`);
    expect(redactNamedValue("error", "bad key team-gateway-0451", ["team-gateway-0451"])).toBe(
      `bad key ${REDACTED}`,
    );
  });
});

describe("linear time on hostile input", () => {
  const MiB = 1024 * 1024;
  const fill = (unit: string) => unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB);
  const configured = ["aaaaaaab", "sk-aaaaaaaaaaaaaaaaaaa", `${"ab".repeat(20)}c`];

  it.each([
    ["prefixes that never complete", fill("sk-aaaaaaaaaaaaaaaaaa ")],
    ["one endless run after a prefix", `sk-${fill("a")}`],
    ["Bearer and whitespace", fill("Bearer \t\t\t\t\t\t\t\t")],
    ["Bearer with short tokens", fill("Bearer abcdefg ")],
    ["secret names and separators", fill('token": "key=password:')],
    ["names followed by short runs", fill("api_key=abc123 ")],
    ["names with whitespace and no separator", fill("secret        x")],
    ["almost a configured value", fill("a")],
    ["a periodic near-match", fill("ab")],
    ["escapes and quotes", fill('key\\\\"\\\\"')],
    ["a run of dots after a name", `Bearer ${fill(".")}a token=${fill(".")}1`],
    ["every shape's prefix", fill("sk-rk_live_AKIAghp_github_pat_xoxb-AIzaBearer ")],
  ])("%s: 1 MiB under 2 s", (_name, text) => {
    const started = performance.now();
    const out = redactSecrets(text, configured);
    const ms = performance.now() - started;
    expect(typeof out).toBe("string");
    expect(ms).toBeLessThan(2_000);
  });

  it("a text made of one configured value, repeated, becomes markers only", () => {
    const text = "aaaaaaab".repeat(MiB / 8);
    const started = performance.now();
    const out = redactSecrets(text, configured);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(out).toBe(REDACTED);
  });
});
