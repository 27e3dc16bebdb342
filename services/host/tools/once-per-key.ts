// One preparation per key and process (a folder the host writes once, the helper's bundle):
// concurrent callers share the one promise; a failure is not remembered, so the next call tries again.

export function oncePerKey<T>(prepare: (key: string) => Promise<T>): (key: string) => Promise<T> {
  const done = new Map<string, Promise<T>>();
  return (key) => {
    let p = done.get(key);
    if (!p) {
      p = prepare(key);
      done.set(key, p);
      p.catch(() => done.delete(key));
    }
    return p;
  };
}
