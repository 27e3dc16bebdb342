// The console's one DOM helper: elements get attributes and text nodes only, never HTML (the
// sanitized plan Markdown, markdown.ts, is the single exception and arrives as nodes).

export type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

/**
 * `h("button", { type: "button", "aria-label": "Abort" }, "Abort")`. `true` sets an empty attribute,
 * `false`/null/undefined leave it out; strings from the bus become text nodes (shown, never parsed).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, ...children);
  return el;
}

export function setAttrs(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) el.removeAttribute(name);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

export function append(el: Element | DocumentFragment, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces an element's children (text stays text). */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** Sets text only when it changed (a live countdown should not churn the accessibility tree). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** Enables or disables a control (and says so to assistive technology). */
export function setDisabled(
  el: HTMLButtonElement | HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | HTMLFieldSetElement,
  disabled: boolean,
): void {
  if (el.disabled !== disabled) el.disabled = disabled;
}

let ids = 0;
/** A fresh element id for label/aria wiring. */
export function uid(prefix: string): string {
  ids += 1;
  return `${prefix}-${ids}`;
}
