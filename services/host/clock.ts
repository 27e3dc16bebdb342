// The host's one clock: every timestamp written, every deadline compared and every XState delay
// (it is the actors' `clock`) comes from here, never from the database's now(). Test hooks may move
// it (docs/protocol.md "Test hooks"): timers due at the new time fire at once, so a 30-minute deadline is never waited
// for in real time. Production never moves it.

export interface Clock {
  now(): number;
  date(): Date;
  /** XState's clock interface: a timer that fires when the host clock reaches now + ms. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Test hooks only: move the clock to an absolute time or by an offset. */
  set(ms: number): void;
  advance(ms: number): void;
}

export interface TimerHandle {
  readonly dueAt: number;
}

interface Timer extends TimerHandle {
  fn: () => void;
  real: ReturnType<typeof setTimeout> | null;
}

export function createClock(base: () => number = Date.now): Clock {
  let offset = 0;
  const timers = new Set<Timer>();
  const now = () => base() + offset;

  const arm = (t: Timer) => {
    if (t.real) clearTimeout(t.real);
    const wait = t.dueAt - now();
    if (wait <= 0) {
      t.real = null;
      timers.delete(t);
      queueMicrotask(t.fn);
      return;
    }
    // Re-checked on wake-up: the clock may have moved meanwhile. (Node caps a timer at ~24.8 days.)
    t.real = setTimeout(() => arm(t), Math.min(wait, 2 ** 31 - 1));
    t.real.unref?.();
  };
  const moved = () => {
    for (const t of [...timers]) arm(t);
  };

  return {
    now,
    date: () => new Date(now()),
    setTimeout(fn, ms) {
      const t: Timer = { fn, dueAt: now() + Math.max(0, ms), real: null };
      timers.add(t);
      arm(t);
      return t;
    },
    clearTimeout(handle) {
      const t = handle as Timer;
      if (t?.real) clearTimeout(t.real);
      timers.delete(t);
    },
    set(ms) {
      offset = ms - base();
      moved();
    },
    advance(ms) {
      offset += ms;
      moved();
    },
  };
}
