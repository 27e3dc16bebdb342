// What reaches a person's terminal: text from the bus with its control characters made visible (a
// tool's output or a model's text must never move the cursor, retitle the window or fake a line of
// ours), and colour only on a TTY and never with NO_COLOR (https://no-color.org). Pure.

/** C0 controls but tab and newline, DEL, C1 controls, and the bidi overrides/isolates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are exactly what is replaced
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character shown as `\u{..}` (tab and newline kept). */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

export type Style = "red" | "green" | "yellow" | "cyan" | "bold" | "dim" | "alert";

const SGR: Record<Style, [string, string]> = {
  red: ["31", "39"],
  green: ["32", "39"],
  yellow: ["33", "39"],
  cyan: ["36", "39"],
  bold: ["1", "22"],
  dim: ["2", "22"],
  alert: ["1;31", "22;39"],
};

export type Paint = (style: Style | null, text: string) => string;

/** Whether output to a stream is coloured: a TTY, and NO_COLOR unset or empty. */
export function colourEnabled(isTTY: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  return isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "");
}

export function painter(enabled: boolean): Paint {
  if (!enabled) return (_style, text) => text;
  return (style, text) => {
    if (style === null || text === "") return text;
    const [on, off] = SGR[style];
    return `\u001b[${on}m${text}\u001b[${off}m`;
  };
}
