// Plan Markdown to sanitized HTML (issue #15 clause 6): marked renders, raw HTML in the Markdown is
// dropped before DOMPurify sees it, and DOMPurify keeps only the elements marked produces, images
// with `data:` sources and http/https/mailto links. The one place in the console that makes HTML.
import DOMPurify, { type DOMPurify as Purifier } from "dompurify";
import { Marked, type Tokens } from "marked";

/** Every element marked produces for Markdown (GFM tables and task lists included); nothing else survives. */
const ALLOWED_TAGS = [
  "p",
  "br",
  "hr",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "blockquote",
  "pre",
  "code",
  "em",
  "strong",
  "del",
  "ul",
  "ol",
  "li",
  "a",
  "img",
  "table",
  "thead",
  "tbody",
  "tr",
  "th",
  "td",
  "input",
];
const ALLOWED_ATTR = ["href", "title", "alt", "src", "align", "start", "type", "checked", "disabled"];
const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/** Bidi controls and zero-width characters: they change what a reader sees without showing themselves. */
const HIDDEN_CHARACTERS: Record<string, { name: string; kind: "bidi control" | "zero-width" }> = {
  "\u061C": { name: "ARABIC LETTER MARK", kind: "bidi control" },
  "\u200E": { name: "LEFT-TO-RIGHT MARK", kind: "bidi control" },
  "\u200F": { name: "RIGHT-TO-LEFT MARK", kind: "bidi control" },
  "\u202A": { name: "LEFT-TO-RIGHT EMBEDDING", kind: "bidi control" },
  "\u202B": { name: "RIGHT-TO-LEFT EMBEDDING", kind: "bidi control" },
  "\u202C": { name: "POP DIRECTIONAL FORMATTING", kind: "bidi control" },
  "\u202D": { name: "LEFT-TO-RIGHT OVERRIDE", kind: "bidi control" },
  "\u202E": { name: "RIGHT-TO-LEFT OVERRIDE", kind: "bidi control" },
  "\u2066": { name: "LEFT-TO-RIGHT ISOLATE", kind: "bidi control" },
  "\u2067": { name: "RIGHT-TO-LEFT ISOLATE", kind: "bidi control" },
  "\u2068": { name: "FIRST STRONG ISOLATE", kind: "bidi control" },
  "\u2069": { name: "POP DIRECTIONAL ISOLATE", kind: "bidi control" },
  "\u200B": { name: "ZERO WIDTH SPACE", kind: "zero-width" },
  "\u200C": { name: "ZERO WIDTH NON-JOINER", kind: "zero-width" },
  "\u200D": { name: "ZERO WIDTH JOINER", kind: "zero-width" },
  "\u2060": { name: "WORD JOINER", kind: "zero-width" },
  "\uFEFF": { name: "ZERO WIDTH NO-BREAK SPACE", kind: "zero-width" },
};
const HIDDEN_RE = new RegExp(`[${Object.keys(HIDDEN_CHARACTERS).join("")}]`, "g");

function codePoint(ch: string): string {
  return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
}

// Raw HTML blocks and inline tags render as nothing (counted as a flag instead).
let rawHtmlCount = 0;
const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      if (!/^\s*<!--/.test(token.text)) rawHtmlCount++;
      return "";
    },
  },
});

let purifier: Purifier | null = null;
let removedImages = 0;
let removedLinks = 0;

/** A DOMPurify instance of its own (hooks are per instance), made on first use (it needs a window). */
function purify(): Purifier {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  // Before DOMPurify's own URI check (a second layer): links only http/https/mailto, images only data:.
  p.addHook("uponSanitizeAttribute", (node, data) => {
    const tag = (node as Element).tagName?.toLowerCase();
    if (tag === "a" && data.attrName === "href" && !allowedLink(data.attrValue)) {
      data.keepAttr = false;
      removedLinks++;
    } else if (tag === "img" && data.attrName === "src" && !/^data:image\//i.test(data.attrValue.trim())) {
      data.keepAttr = false;
      removedImages++;
    }
  });
  p.addHook("afterSanitizeAttributes", (node) => {
    const el = node as Element;
    const tag = el.tagName?.toLowerCase();
    if (tag === "a") el.setAttribute("rel", "noopener noreferrer");
    // GFM task list boxes only, never editable.
    if (tag === "input") {
      if (el.getAttribute("type") !== "checkbox") el.remove();
      else el.setAttribute("disabled", "");
    }
  });
  purifier = p;
  return p;
}

function allowedLink(href: string): boolean {
  try {
    return LINK_PROTOCOLS.has(new URL(href.trim()).protocol);
  } catch {
    return false; // relative or malformed: not followed
  }
}

const PURIFY_CONFIG = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  FORBID_TAGS: ["style", "iframe", "script", "object", "embed", "form", "svg", "math"],
  FORBID_ATTR: ["style"],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

export interface RenderedPlan {
  /** Sanitized HTML: only the allow-listed elements and attributes. */
  html: string;
  /** Content that does not render or is not shown as written, one line per kind with its count. */
  flags: string[];
}

/** Renders plan Markdown for the approval card; every hidden or dropped thing is named in `flags`. */
export function renderPlan(markdown: string): RenderedPlan {
  rawHtmlCount = 0;
  removedImages = 0;
  removedLinks = 0;
  const tokens = marked.lexer(markdown);
  const unsafe = marked.parser(tokens);
  const html = purify().sanitize(unsafe, PURIFY_CONFIG) as string;
  const flags: string[] = [];
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

  const comments = markdown.match(/<!--[\s\S]*?(?:-->|$)/g)?.length ?? 0;
  if (comments > 0) flags.push(`${plural(comments, "HTML comment", "HTML comments")} (not shown)`);
  const definitions = Object.keys(tokens.links ?? {}).length;
  if (definitions > 0)
    flags.push(
      `${plural(definitions, "link reference definition", "link reference definitions")} (not shown)`,
    );
  if (rawHtmlCount > 0)
    flags.push(`${plural(rawHtmlCount, "raw HTML element", "raw HTML elements")} removed`);
  if (removedImages > 0)
    flags.push(
      `${plural(removedImages, "image with a non-data source", "images with non-data sources")} not loaded`,
    );
  if (removedLinks > 0)
    flags.push(
      `${plural(removedLinks, "link that is not http, https or mailto", "links that are not http, https or mailto")} disabled`,
    );

  const counts = new Map<string, number>();
  for (const ch of markdown.match(HIDDEN_RE) ?? []) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  for (const [ch, n] of [...counts].sort(([a], [b]) => a.codePointAt(0)! - b.codePointAt(0)!)) {
    const info = HIDDEN_CHARACTERS[ch]!;
    flags.push(`${n} × ${codePoint(ch)} ${info.name} (${info.kind})`);
  }
  return { html, flags };
}

/** The sanitized plan as nodes to append (no innerHTML anywhere in the console). */
export function planFragment(html: string): DocumentFragment {
  return purify().sanitize(html, { ...PURIFY_CONFIG, RETURN_DOM_FRAGMENT: true });
}

/** The Markdown for the raw view: hidden characters made visible as `⟦U+202E⟧`. */
export function rawWithHiddenShown(markdown: string): string {
  return markdown.replace(HIDDEN_RE, (ch) => `⟦${codePoint(ch)}⟧`);
}
