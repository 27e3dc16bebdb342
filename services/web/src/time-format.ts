// Deadlines as people read them: the absolute instant (ISO and local time) and a countdown. Pure:
// the caller passes the clock.

/** `29:58 left`, `1:02:03 left`, or `expired` once the deadline has passed. */
export function countdown(deadline: string, nowMs: number): string {
  const left = Date.parse(deadline) - nowMs;
  if (!Number.isFinite(left)) return "unknown deadline";
  if (left <= 0) return "expired";
  const total = Math.ceil(left / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(s).padStart(2, "0")} left`;
}

/** The instant as the host sent it (ISO, UTC) and in the browser's local time. */
export function absoluteTime(iso: string): { iso: string; local: string } {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return { iso, local: iso };
  return { iso: d.toISOString(), local: d.toLocaleString() };
}
