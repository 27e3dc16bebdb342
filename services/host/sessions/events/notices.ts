// A small typed notice board: a component announces what happened (a lease was lost, the writer was
// fenced) and whoever cares subscribes, so no component holds a late-assigned reference to another.
export type Unsubscribe = () => void;

export interface Notices<E extends Record<string, unknown>> {
  on<K extends keyof E>(name: K, fn: (payload: E[K]) => void): Unsubscribe;
  emit<K extends keyof E>(name: K, payload: E[K]): void;
}

/** Listeners run in subscription order; one that throws is reported to `onListenerError`, not to the emitter. */
export function createNotices<E extends Record<string, unknown>>(
  onListenerError: (name: keyof E, err: unknown) => void = () => {},
): Notices<E> {
  const listeners = new Map<keyof E, Set<(payload: never) => void>>();
  return {
    on(name, fn) {
      let set = listeners.get(name);
      if (!set) {
        set = new Set();
        listeners.set(name, set);
      }
      set.add(fn as (payload: never) => void);
      return () => set.delete(fn as (payload: never) => void);
    },
    emit(name, payload) {
      for (const fn of [...(listeners.get(name) ?? [])]) {
        try {
          (fn as (p: typeof payload) => void)(payload);
        } catch (err) {
          onListenerError(name, err);
        }
      }
    },
  };
}
