// README.md's runnable blocks: the first fenced block of a language after a heading, as written.
import { readFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "./processes.ts";

/** The first ```<lang> block after `heading` (null: from the top), or null when there is none. */
export function fencedBlock(markdown: string, heading: string | null, lang = "sh"): string | null {
  let text = markdown;
  if (heading !== null) {
    const at = markdown.search(
      new RegExp(`^${heading.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")}[ \\t]*$`, "m"),
    );
    if (at < 0) return null;
    text = markdown.slice(at);
  }
  const block = new RegExp(`^\`\`\`${lang}[ \\t]*\\n([\\s\\S]*?)^\`\`\`[ \\t]*$`, "m").exec(text);
  return block ? (block[1] ?? null) : null;
}

export function readme(): string {
  return readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
}
