/**
 * The seccomp filter every sandbox runs under (bwrap `--seccomp FD` loads it just before it execs
 * the agent): a classic BPF program, built here so no binary comes from elsewhere. It refuses what
 * container runtimes refuse by default — mounts, new namespaces, bpf, keyrings, ptrace, kexec,
 * module loading, clock and swap changes, io_uring — and any syscall of another ABI (i386, x32).
 */
export function seccompProgram(arch: string = process.arch): Buffer {
  const table = ARCHES[arch];
  if (!table) throw new Error(`no seccomp filter for the ${arch} architecture`);
  return assemble(table);
}

/** A syscall's number on this machine (tests call them directly), or undefined. */
export function syscallNumber(name: Syscall, arch: string = process.arch): number | undefined {
  return ARCHES[arch]?.numbers[name];
}

/** The syscalls refused with EPERM (those missing from an arch table do not exist there). */
const REFUSED_SYSCALLS = [
  'mount',
  'umount2',
  'pivot_root',
  'chroot',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'unshare',
  'setns',
  'bpf',
  'add_key',
  'request_key',
  'keyctl',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'kcmp',
  'pidfd_getfd',
  'kexec_load',
  'kexec_file_load',
  'init_module',
  'finit_module',
  'delete_module',
  'acct',
  'reboot',
  'swapon',
  'swapoff',
  'settimeofday',
  'clock_settime',
  'clock_adjtime',
  'quotactl',
  'quotactl_fd',
  'syslog',
  'perf_event_open',
  'userfaultfd',
  'fanotify_init',
  'name_to_handle_at',
  'open_by_handle_at',
  'lookup_dcookie',
  'move_pages',
  'vhangup',
  'nfsservctl',
  'uselib',
  'ustat',
  'sysfs',
  '_sysctl',
  'iopl',
  'ioperm',
  'create_module',
  'get_kernel_syms',
  'query_module',
] as const;

export type Syscall = (typeof REFUSED_SYSCALLS)[number] | 'clone' | 'clone3' | 'io_uring_setup';

interface ArchTable {
  auditArch: number;
  /** x86_64 also accepts x32 calls (nr | 0x40000000): refused wholesale. */
  x32Bit: boolean;
  numbers: Partial<Record<Syscall, number>>;
}

// prettier-ignore
const X86_64: ArchTable['numbers'] = {
  clone: 56, clone3: 435, io_uring_setup: 425, ptrace: 101, syslog: 103, uselib: 134, ustat: 136,
  sysfs: 139, vhangup: 153, pivot_root: 155, _sysctl: 156, chroot: 161, acct: 163,
  settimeofday: 164, mount: 165, umount2: 166, swapon: 167, swapoff: 168, reboot: 169, iopl: 172,
  ioperm: 173, create_module: 174, init_module: 175, delete_module: 176, get_kernel_syms: 177,
  query_module: 178, quotactl: 179, nfsservctl: 180, lookup_dcookie: 212, clock_settime: 227,
  kexec_load: 246, add_key: 248, request_key: 249, keyctl: 250, unshare: 272, move_pages: 279,
  perf_event_open: 298, fanotify_init: 300, name_to_handle_at: 303, open_by_handle_at: 304,
  clock_adjtime: 305, setns: 308, process_vm_readv: 310, process_vm_writev: 311, kcmp: 312,
  finit_module: 313, kexec_file_load: 320, bpf: 321, userfaultfd: 323, open_tree: 428,
  move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433, pidfd_getfd: 438,
  mount_setattr: 442, quotactl_fd: 443,
};

// prettier-ignore
const AARCH64: ArchTable['numbers'] = {
  clone: 220, clone3: 435, io_uring_setup: 425, lookup_dcookie: 18, umount2: 39, mount: 40,
  pivot_root: 41, nfsservctl: 42, chroot: 51, vhangup: 58, quotactl: 60, acct: 89, unshare: 97,
  kexec_load: 104, init_module: 105, delete_module: 106, clock_settime: 112, syslog: 116,
  ptrace: 117, reboot: 142, settimeofday: 170, add_key: 217, request_key: 218, keyctl: 219,
  swapon: 224, swapoff: 225, move_pages: 239, perf_event_open: 241, fanotify_init: 262,
  name_to_handle_at: 264, open_by_handle_at: 265, clock_adjtime: 266, setns: 268,
  process_vm_readv: 270, process_vm_writev: 271, kcmp: 272, finit_module: 273, bpf: 280,
  userfaultfd: 282, kexec_file_load: 294, open_tree: 428, move_mount: 429, fsopen: 430,
  fsconfig: 431, fsmount: 432, fspick: 433, pidfd_getfd: 438, mount_setattr: 442, quotactl_fd: 443,
};

const ARCHES: Record<string, ArchTable> = {
  x64: { auditArch: 0xc000003e, x32Bit: true, numbers: X86_64 },
  arm64: { auditArch: 0xc00000b7, x32Bit: false, numbers: AARCH64 },
};

const EPERM = 1;
const ENOSYS = 38;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
/** CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (clone's low byte is a signal). */
const CLONE_NEW_FLAGS = 0x7e020000;
const X32_BIT = 0x40000000;
/** io_uring_setup, _enter and _register are three consecutive numbers on every arch. */
const IO_URING_CALLS = 3;

// BPF opcodes: load word at absolute offset, jumps on the accumulator, return a constant.
const LD_ABS = 0x20;
const JEQ = 0x15;
const JGE = 0x35;
const JSET = 0x45;
const RET = 0x06;
/** Offsets into struct seccomp_data. */
const NR = 0;
const ARCH = 4;
const ARG0_LOW = 16;

type Label = 'kill' | 'eperm' | 'enosys' | 'allow' | 'cloneFlags';
type Insn = { code: number; k: number; jt?: Label; jf?: Label; label?: Label };

/**
 * The program: wrong arch → kill; x32 → ENOSYS; clone with namespace flags → EPERM; clone3 and
 * io_uring → ENOSYS (libc and libuv fall back to clone and epoll); the refused list → EPERM.
 */
function assemble(table: ArchTable): Buffer {
  const n = table.numbers;
  const insns: Insn[] = [
    { code: LD_ABS, k: ARCH },
    { code: JEQ, k: table.auditArch, jf: 'kill' },
    { code: LD_ABS, k: NR },
  ];
  if (table.x32Bit) insns.push({ code: JGE, k: X32_BIT, jt: 'enosys' });
  insns.push({ code: JEQ, k: need(n, 'clone'), jt: 'cloneFlags' });
  insns.push({ code: JEQ, k: need(n, 'clone3'), jt: 'enosys' });
  const uring = need(n, 'io_uring_setup');
  for (let i = 0; i < IO_URING_CALLS; i += 1) insns.push({ code: JEQ, k: uring + i, jt: 'enosys' });
  for (const name of REFUSED_SYSCALLS) {
    const nr = n[name];
    if (nr !== undefined) insns.push({ code: JEQ, k: nr, jt: 'eperm' });
  }
  insns.push(
    { code: RET, k: RET_ALLOW },
    { code: LD_ABS, k: ARG0_LOW, label: 'cloneFlags' },
    { code: JSET, k: CLONE_NEW_FLAGS, jt: 'eperm', jf: 'allow' },
    { code: RET, k: RET_ALLOW, label: 'allow' },
    { code: RET, k: RET_ERRNO | EPERM, label: 'eperm' },
    { code: RET, k: RET_ERRNO | ENOSYS, label: 'enosys' },
    { code: RET, k: RET_KILL_PROCESS, label: 'kill' },
  );
  const at = new Map<Label, number>();
  insns.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(offset(at, i, insn.jt), i * 8 + 2);
    out.writeUInt8(offset(at, i, insn.jf), i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

/** A jump is relative to the next instruction; no label means fall through. */
function offset(at: Map<Label, number>, from: number, to: Label | undefined): number {
  if (to === undefined) return 0;
  const target = at.get(to);
  if (target === undefined || target <= from || target - from - 1 > 255) {
    throw new Error(`seccomp: bad jump from ${from} to ${to}`);
  }
  return target - from - 1;
}

function need(numbers: ArchTable['numbers'], name: Syscall): number {
  const nr = numbers[name];
  if (nr === undefined) throw new Error(`seccomp: no syscall number for ${name}`);
  return nr;
}
