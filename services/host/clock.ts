// The host's one clock: every timestamp written and every deadline compared comes from here, never
// from the database's now(). Test hooks may shift it (DESIGN §10); production never does.

export interface Clock {
  now(): number;
  date(): Date;
  /** Test hooks only: move the clock to an absolute time or by an offset. */
  set(ms: number): void;
  advance(ms: number): void;
}

export function createClock(base: () => number = Date.now): Clock {
  let offset = 0;
  return {
    now: () => base() + offset,
    date: () => new Date(base() + offset),
    set(ms) {
      offset = ms - base();
    },
    advance(ms) {
      offset += ms;
    },
  };
}
