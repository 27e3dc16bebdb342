// Keyed list updates: elements are created once per key, updated in place and moved only when out
// of order, so focus, open disclosures and scroll positions survive a re-render.

export function reconcile<T>(
  container: Element,
  items: readonly T[],
  keyOf: (item: T) => string,
  create: (item: T) => HTMLElement,
  update: (el: HTMLElement, item: T) => void,
): void {
  const existing = new Map<string, HTMLElement>();
  for (const child of [...container.children]) {
    const key = (child as HTMLElement).dataset.key;
    if (key !== undefined) existing.set(key, child as HTMLElement);
  }
  const wanted = new Set(items.map(keyOf));
  for (const [key, el] of existing) if (!wanted.has(key)) el.remove();
  let cursor: Element | null = container.firstElementChild;
  for (const item of items) {
    const key = keyOf(item);
    let el = existing.get(key);
    if (!el) {
      el = create(item);
      el.dataset.key = key;
    }
    update(el, item);
    if (el !== cursor) container.insertBefore(el, cursor);
    else cursor = cursor.nextElementSibling;
  }
}
