// The user-namespace filter's program: classic BPF for each architecture it knows, whole
// instructions, every path ending in a return; none for an architecture it does not know (the
// caller refuses the sandbox). What it refuses is tested against the kernel in
// tests/sandbox-network.test.ts (unshare and bwrap inside a sandbox with network).
import { describe, expect, it } from "vitest";
import { noUserNamespaceFilter } from "./sandbox-seccomp.ts";

describe("noUserNamespaceFilter", () => {
  it.each(["x64", "arm64"])("%s: whole instructions, in-range forward jumps, a return last", (arch) => {
    const prog = noUserNamespaceFilter(arch)!;
    expect(prog.length % 8).toBe(0);
    const n = prog.length / 8;
    for (let i = 0; i < n; i++) {
      const code = prog.readUInt16LE(i * 8);
      if ((code & 0x07) === 0x05)
        for (const off of [prog.readUInt8(i * 8 + 2), prog.readUInt8(i * 8 + 3)])
          expect(i + 1 + off).toBeLessThan(n);
    }
    expect(prog.readUInt16LE((n - 1) * 8)).toBe(0x06);
  });

  it("has no program for an architecture it has no table for", () => {
    expect(noUserNamespaceFilter("s390x")).toBeNull();
  });
});
