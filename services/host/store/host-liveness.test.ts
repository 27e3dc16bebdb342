// The liveness observer's rules (host-liveness.ts): dead means the counter did not move for a lease
// on the observer's own clock (and across enough ticks); stopped is dead at once; timestamps other
// hosts wrote are never read, so a host whose clock is far off but whose counter moves lives.
import { describe, expect, it } from "vitest";
import { createLivenessObserver, type HostRow } from "./host-liveness.ts";

const LEASE = 1_000;
const row = (id: string, heartbeat: number, state: HostRow["state"] = "running"): HostRow => ({
  id,
  heartbeat,
  state,
});

describe("liveness observer", () => {
  it("declares a running host dead once its counter stood still for a lease, not before", () => {
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE, minObservations: 3 });
    expect(o.observe([row("a", 5)], 0)).toEqual([]);
    expect(o.observe([row("a", 5)], 400)).toEqual([]);
    expect(o.observe([row("a", 5)], 800)).toEqual([]);
    expect(o.observe([row("a", 5)], 1_200)).toEqual([{ id: "a", heartbeat: 5, state: "running" }]);
  });

  it("a counter that moves resets the wait", () => {
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE, minObservations: 1 });
    o.observe([row("a", 1)], 0);
    expect(o.observe([row("a", 2)], 900)).toEqual([]);
    expect(o.observe([row("a", 2)], 1_500)).toEqual([]);
    expect(o.observe([row("a", 2)], 1_900)).toEqual([{ id: "a", heartbeat: 2, state: "running" }]);
  });

  it("a stopped host is dead at once, a dead one and the observer itself never", () => {
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE });
    expect(o.observe([row("s", 9, "stopped"), row("d", 1, "dead"), row("me", 1)], 0)).toEqual([
      { id: "s", heartbeat: 9, state: "stopped" },
    ]);
    expect(o.observe([row("d", 1, "dead"), row("me", 1)], 10 * LEASE)).toEqual([]);
  });

  it("a host whose own timestamps are skewed far past the lease but whose counter advances is never dead", () => {
    // The rows carry no time at all: heartbeat_at of that host could say anything. Only its counter.
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE, minObservations: 2 });
    for (let t = 0, n = 0; t < 20 * LEASE; t += 300, n++)
      expect(o.observe([row("skewed", n)], t)).toEqual([]);
  });

  it("a jump of the observer's own clock kills no live peer before enough ticks", () => {
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE, minObservations: 3 });
    o.observe([row("a", 1)], 0);
    // Clock moved 10 minutes between two ticks; the peer beat in between.
    expect(o.observe([row("a", 1)], 600_000)).toEqual([]);
    expect(o.observe([row("a", 2)], 600_300)).toEqual([]);
    expect(o.observe([row("a", 3)], 600_600)).toEqual([]);
  });

  it("forgets hosts that are gone from the table", () => {
    const o = createLivenessObserver({ selfId: "me", leaseMs: LEASE, minObservations: 1 });
    o.observe([row("a", 1)], 0);
    o.observe([], 500);
    expect(o.observe([row("a", 1)], 1_100)).toEqual([]);
  });
});
