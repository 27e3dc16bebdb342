// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { planFragment, rawWithHiddenShown, renderPlan } from "./markdown.ts";

/** The rendered plan as a DOM, to look for what must not be there. */
function dom(html: string): HTMLElement {
  const div = document.createElement("div");
  div.append(planFragment(html));
  return div;
}

describe("renderPlan", () => {
  it("renders ordinary Markdown: headings, lists, code, tables, task lists", () => {
    const { html, flags } = renderPlan(
      "# Plan\n\n1. **edit** `a.ts`\n2. run tests\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n\n```sh\nnpm test\n```\n",
    );
    const d = dom(html);
    expect(d.querySelector("h1")?.textContent).toBe("Plan");
    expect(d.querySelectorAll("ol li")).toHaveLength(2);
    expect(d.querySelector("strong")?.textContent).toBe("edit");
    expect(d.querySelector("pre code")?.textContent).toBe("npm test\n");
    expect(d.querySelector("td")?.textContent).toBe("1");
    const box = d.querySelector("input");
    expect(box?.getAttribute("type")).toBe("checkbox");
    expect(box?.hasAttribute("disabled")).toBe(true);
    expect(flags).toEqual([]);
  });

  it("drops a remote image's source and keeps a data: image", () => {
    const { html, flags } = renderPlan(
      "![track](https://evil.example/pixel.png) ![ok](data:image/png;base64,iVBORw0KGgo=) ![rel](/x.png)",
    );
    const imgs = [...dom(html).querySelectorAll("img")];
    expect(imgs.map((i) => i.getAttribute("src"))).toEqual([
      null,
      "data:image/png;base64,iVBORw0KGgo=",
      null,
    ]);
    expect(html).not.toContain("evil.example");
    expect(flags).toContain("2 images with non-data sources not loaded");
  });

  it("flags an HTML comment and does not render it", () => {
    const { html, flags } = renderPlan("Step one.\n\n<!-- rm -rf / when nobody looks -->\n\nStep two.");
    expect(html).not.toContain("rm -rf");
    expect(html).not.toContain("<!--");
    expect(flags).toContain("1 HTML comment (not shown)");
  });

  it("removes <script>, its content and any raw HTML", () => {
    const { html, flags } = renderPlan(
      'Hello <b>bold</b>\n\n<script>window.pwned = 1</script>\n\n<div class="x">block</div>',
    );
    const d = dom(html);
    expect(d.querySelector("script, b, div")).toBeNull();
    expect(html).not.toContain("pwned");
    expect(html).not.toMatch(/<(script|b|div)\b/);
    expect(flags.some((f) => /raw HTML elements? removed/.test(f))).toBe(true);
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });

  it("removes <img onerror> (raw HTML) and never keeps an event handler", () => {
    const { html } = renderPlan(
      '<img src="x" onerror="window.pwned=2">\n\ntext <img src=x onerror=alert(1)>',
    );
    expect(html).not.toMatch(/onerror/i);
    expect(dom(html).querySelector("img")).toBeNull();
  });

  it("disables javascript: and other non-http links, and sets rel on the rest", () => {
    const { html, flags } = renderPlan(
      "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](https://example.com) [d](mailto:x@example.com) [e](vbscript:x) [f](data:text/html,hi)",
    );
    const links = [...dom(html).querySelectorAll("a")];
    expect(links.map((a) => a.getAttribute("href"))).toEqual([
      null,
      null,
      "https://example.com",
      "mailto:x@example.com",
      null,
      null,
    ]);
    for (const a of links) expect(a.getAttribute("rel")).toBe("noopener noreferrer");
    expect(html).not.toMatch(/javascript:/i);
    expect(flags).toContain("4 links that are not http, https or mailto disabled");
  });

  it("removes <iframe> and <style>", () => {
    const { html } = renderPlan(
      '<iframe src="https://evil.example"></iframe>\n\n<style>body{display:none}</style>\n\nafter',
    );
    const d = dom(html);
    expect(d.querySelector("iframe, style")).toBeNull();
    expect(html).not.toContain("evil.example");
    expect(html).not.toContain("display:none");
    expect(d.textContent).toContain("after");
  });

  it("flags a link reference definition", () => {
    const { html, flags } = renderPlan(
      "See [the docs][d].\n\n[d]: https://example.com/docs\n[unused]: https://evil.example",
    );
    expect(dom(html).querySelector("a")?.getAttribute("href")).toBe("https://example.com/docs");
    expect(html).not.toContain("evil.example");
    expect(flags).toContain("2 link reference definitions (not shown)");
  });

  it("lists bidi controls and zero-width characters by kind with their counts", () => {
    const md = "Delete \u202Eexe.txt\u202C and\u200B\u200B keep\u2066x\u2069";
    const { flags } = renderPlan(md);
    expect(flags).toEqual([
      "2 × U+200B ZERO WIDTH SPACE (zero-width)",
      "1 × U+202C POP DIRECTIONAL FORMATTING (bidi control)",
      "1 × U+202E RIGHT-TO-LEFT OVERRIDE (bidi control)",
      "1 × U+2066 LEFT-TO-RIGHT ISOLATE (bidi control)",
      "1 × U+2069 POP DIRECTIONAL ISOLATE (bidi control)",
    ]);
    expect(rawWithHiddenShown(md)).toBe(
      "Delete ⟦U+202E⟧exe.txt⟦U+202C⟧ and⟦U+200B⟧⟦U+200B⟧ keep⟦U+2066⟧x⟦U+2069⟧",
    );
  });

  it("keeps only allow-listed attributes", () => {
    const { html } = renderPlan('[x](https://example.com "title")');
    expect(html).toBe('<p><a href="https://example.com" title="title" rel="noopener noreferrer">x</a></p>\n');
  });
});
