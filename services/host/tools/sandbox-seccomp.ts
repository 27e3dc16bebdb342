// The seccomp filter of a sandbox with network (docs/security.md "No nested user namespaces"): no
// process inside may create a user namespace. Without network bwrap's own `--disable-userns` does
// this; with network it cannot, because it nests a second user namespace and slirp4netns must join
// the one that owns the network namespace. This module owns the classic-BPF program, nothing else.

/** `struct seccomp_data` offsets: the syscall number, the audit arch, the low word of args[0]. */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;
const CLONE_NEWUSER = 0x1000_0000;
const X32_SYSCALL_BIT = 0x4000_0000;
const RET_ALLOW = 0x7fff_0000;
const RET_KILL_PROCESS = 0x8000_0000;
const RET_ERRNO = 0x0005_0000;
const EPERM = 1;
const ENOSYS = 38;
const LD_ABS = 0x20;
const JEQ = 0x15;
const JSET = 0x45;
const RET = 0x06;

/** One system call ABI: its audit arch and the numbers of unshare, clone and clone3 (flags in arg 0). */
interface Abi {
  arch: number;
  unshare: number;
  clone: number;
  clone3: number;
  /** x86_64: syscalls with the x32 bit set are another ABI, refused whole. */
  x32?: boolean;
}

/** The ABIs a process on this host may use (the native one and its 32-bit compat), by Node arch. */
const ABIS: Record<string, Abi[]> = {
  x64: [
    { arch: 0xc000_003e, unshare: 272, clone: 56, clone3: 435, x32: true },
    { arch: 0x4000_0003, unshare: 310, clone: 120, clone3: 435 },
  ],
  arm64: [
    { arch: 0xc000_00b7, unshare: 97, clone: 220, clone3: 435 },
    { arch: 0x4000_0028, unshare: 337, clone: 120, clone3: 435 },
  ],
};

type Ins = { code: number; k: number; jt?: string; jf?: string; label?: string };

/** Resolves label jumps (forward only, as classic BPF requires) and encodes `struct sock_filter`s. */
function assemble(prog: Ins[]): Buffer {
  const at = new Map(prog.flatMap((ins, i) => (ins.label ? [[ins.label, i] as const] : [])));
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((ins, i) => {
    const off = (label?: string) => {
      if (label === undefined) return 0;
      const d = at.get(label)! - i - 1;
      if (!(d >= 0 && d <= 255)) throw new Error(`seccomp jump to ${label} out of range`);
      return d;
    };
    out.writeUInt16LE(ins.code, i * 8);
    out.writeUInt8(off(ins.jt), i * 8 + 2);
    out.writeUInt8(off(ins.jf), i * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The filter (bwrap `--seccomp`), or null where this host's architecture has no table here (the
 * caller refuses the sandbox then). unshare and clone with CLONE_NEWUSER are EPERM; clone3, whose
 * flags a classic filter cannot read, is ENOSYS, so the C library falls back to clone; a syscall of
 * an ABI not listed kills the process. Everything else is allowed.
 */
export function noUserNamespaceFilter(nodeArch: string = process.arch): Buffer | null {
  const abis = ABIS[nodeArch];
  if (!abis) return null;
  const prog: Ins[] = [];
  abis.forEach((abi, i) => {
    const next = `abi${i + 1}`;
    prog.push({ code: LD_ABS, k: ARCH, label: `abi${i}` });
    prog.push({ code: JEQ, k: abi.arch, jf: next });
    prog.push({ code: LD_ABS, k: NR });
    if (abi.x32) prog.push({ code: JSET, k: X32_SYSCALL_BIT, jt: "enosys" });
    prog.push({ code: JEQ, k: abi.clone3, jt: "enosys" });
    prog.push({ code: JEQ, k: abi.unshare, jt: "flags" });
    prog.push({ code: JEQ, k: abi.clone, jt: "flags", jf: "allow" });
  });
  prog.push({ code: RET, k: RET_KILL_PROCESS, label: `abi${abis.length}` });
  prog.push({ code: LD_ABS, k: ARG0_LOW, label: "flags" });
  prog.push({ code: JSET, k: CLONE_NEWUSER, jt: "eperm", jf: "allow" });
  prog.push({ code: RET, k: RET_ALLOW, label: "allow" });
  prog.push({ code: RET, k: RET_ERRNO | EPERM, label: "eperm" });
  prog.push({ code: RET, k: RET_ERRNO | ENOSYS, label: "enosys" });
  return assemble(prog);
}
