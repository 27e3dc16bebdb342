// Removes secrets from text before it leaves a process (docs/security.md "Provider text carries no
// secret"): the values the process was configured with (a worker's API keys and header values) and
// strings shaped like common credentials whatever their origin. Pure, and linear in the text: every
// shape is a literal prefix and one run of a character class, so no input makes a pattern backtrack.

/** What stands where a secret was. */
export const REDACTED = "[redacted]";

/**
 * A configured value shorter than this (after trimming) is not looked for as a value: a local
 * server's key such as "ollama" or "k" would otherwise blank ordinary words in every text. Shapes
 * are still removed whatever a value's length.
 */
export const MIN_SECRET_CHARS = 8;

/** Field and parameter names whose long value is a secret (`api_key=`, `"token": "..."`). */
const SECRET_NAME = "(?:key|token|secret|password|passwd)";
/** The characters of a key, token or password run: base64, base64url, hex, JWT dots. */
const RUN = "[A-Za-z0-9+/=_.~-]";
/** A value after a secret name must be this long to be taken for a secret. */
const MIN_NAMED_RUN = 16;

const NAMED_VALUE = new RegExp(
  `(${SECRET_NAME}(?:\\\\{0,2}["'])?[ \\t]{0,8}[:=][ \\t]{0,8}(?:\\\\{0,2}["'])?)(${RUN}{${MIN_NAMED_RUN},})`,
  "gi",
);
const WHOLE_RUN = new RegExp(`^${RUN}{${MIN_NAMED_RUN},}$`);
const FIELD_NAME = new RegExp(`${SECRET_NAME}$`, "i");

/**
 * A run after a secret name is a secret when it holds a digit and is no absolute path: code such as
 * `token = readTokenFromEnvironment` and `key_file=/etc/keys/team1.pem` stays as it is.
 */
const secretRun = (run: string): boolean => /\d/.test(run) && !run.startsWith("/");

/** A bearer credential: 16 characters, or 8 with a digit ("Bearer authentication" is prose). */
const bearerToken = (token: string): boolean => token.length >= 16 || (token.length >= 8 && /\d/.test(token));

/** A credential shape: its pattern, and the part of a match that is the secret (null: none). */
type Shape = { pattern: RegExp; secret: (match: RegExpExecArray) => [number, number] | null };

const whole = (pattern: RegExp): Shape => ({
  pattern,
  secret: (m) => [m.index, m.index + m[0].length],
});

/**
 * A shape whose first group names the secret (kept) and whose second is the secret, when `is` says
 * so. Dots that end the run end a sentence ("... was Bearer abc123.") and are kept.
 */
const named = (pattern: RegExp, is: (run: string) => boolean): Shape => ({
  pattern,
  secret: (m) => {
    let run = m[2] ?? "";
    let end = run.length;
    while (end > 0 && run[end - 1] === ".") end--; // a loop: /\.+$/ is quadratic on a run of dots
    run = run.slice(0, end);
    const start = m.index + (m[1] ?? "").length;
    return is(run) ? [start, start + run.length] : null;
  },
});

/** Credential shapes removed from every text, whoever configured them. */
const SHAPES: readonly Shape[] = [
  // OpenAI (sk-..., sk-proj-..., sk-svcacct-...) and Anthropic (sk-ant-api03-...) keys.
  whole(/\bsk-[A-Za-z0-9_-]{20,}/g),
  // Stripe-style secret and restricted keys.
  whole(/\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/g),
  // AWS access key ids (long-lived AKIA, temporary ASIA).
  whole(/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g),
  // GitHub tokens: personal, OAuth, app, user-to-server, refresh; fine-grained personal tokens.
  whole(/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g),
  // Slack bot, user, app and legacy tokens.
  whole(/\bxox[abposr]-[A-Za-z0-9-]{10,}/g),
  // Google API keys.
  whole(/\bAIza[A-Za-z0-9_-]{35}/g),
  named(/\b(Bearer[ \t]{1,8})([A-Za-z0-9._~+/-]+=*)/gi, bearerToken),
  named(NAMED_VALUE, secretRun),
];

/** Forms of the lists seen before (a logger passes the same list for every line): a list is read once. */
const formsOf = new WeakMap<object, readonly string[]>();

/** The forms a configured value may take in a text: as is, JSON-escaped, URL-encoded. */
function forms(values: Iterable<string | undefined>): readonly string[] {
  const known = formsOf.get(values);
  if (known) return known;
  const out = new Set<string>();
  for (const v of values) {
    if (typeof v !== "string" || v.trim().length < MIN_SECRET_CHARS) continue;
    out.add(v);
    out.add(JSON.stringify(v).slice(1, -1));
    try {
      out.add(encodeURIComponent(v));
    } catch {
      // A lone surrogate has no URL form; the other forms are still looked for.
    }
  }
  const list = [...out];
  formsOf.set(values, list);
  return list;
}

/** Marks `[start, end)` in `mask` (made on first use); returns the mask. */
function mark(mask: Uint8Array | undefined, length: number, start: number, end: number): Uint8Array {
  const m = mask ?? new Uint8Array(length);
  m.fill(1, start, end);
  return m;
}

/**
 * Marks every occurrence of every value (overlapping ones too) and every shape's secret part, all
 * in the text as given: a value and a shape that overlap, or two values, leave no piece of either.
 */
function secretMask(text: string, values: readonly string[]): Uint8Array | undefined {
  let mask: Uint8Array | undefined;
  for (const v of values) {
    let marked = 0; // this value's occurrences come in order: each char is marked once per value
    for (let i = text.indexOf(v); i !== -1; i = text.indexOf(v, i + 1)) {
      mask = mark(mask, text.length, Math.max(i, marked), i + v.length);
      marked = i + v.length;
    }
  }
  for (const { pattern, secret } of SHAPES) {
    pattern.lastIndex = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      const span = secret(m);
      if (span) mask = mark(mask, text.length, span[0], span[1]);
    }
  }
  return mask;
}

/**
 * `text` with every configured value in `secrets` (of MIN_SECRET_CHARS or more) and every
 * credential-shaped string replaced by REDACTED, one marker per run of secret characters. Anything
 * else is returned unchanged: ordinary prose, code, paths and the provider's words around a key.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  const mask = secretMask(text, forms(secrets));
  if (!mask) return text;
  let out = "";
  let i = 0;
  while (i < text.length) {
    const start = i;
    const redacted = mask[i] === 1;
    while (i < text.length && (mask[i] === 1) === redacted) i++;
    out += redacted ? REDACTED : text.slice(start, i);
  }
  return out;
}

/**
 * A named value (a log field, a header): redacted whole when its name says secret (`apiKey`,
 * `token`, `password`) and it looks like one, else as any text.
 */
export function redactNamedValue(
  name: string,
  value: string,
  secrets: Iterable<string | undefined> = [],
): string {
  if (FIELD_NAME.test(name) && WHOLE_RUN.test(value) && secretRun(value)) return REDACTED;
  return redactSecrets(value, secrets);
}
