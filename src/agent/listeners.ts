import { closeSync, openSync, readdirSync, readSync } from 'node:fs';

/** A TCP socket in LISTEN state in this sandbox's network namespace. */
export interface Listener {
  /** Where to connect to it: its own address, or loopback for a wildcard bind. */
  host: string;
  port: number;
}

/** The app controls how many sockets it opens: read at most this much of each table. */
const MAX_TABLE_BYTES = 256 * 1024;
const LISTEN_STATE = '0A';
const STAT_BYTES = 4096;

/**
 * Every listening TCP socket, from /proc/net/tcp and tcp6. The sandbox has its own network
 * namespace, so these are exactly the app's listeners (and the agent's own, which callers drop).
 */
export function listeners(): Listener[] {
  return [...table('/proc/net/tcp', 4), ...table('/proc/net/tcp6', 6)];
}

function table(path: string, family: 4 | 6): Listener[] {
  const found: Listener[] = [];
  for (const line of readBounded(path, MAX_TABLE_BYTES).split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [address, port] = (fields[1] ?? '').split(':');
    if (fields[3] !== LISTEN_STATE || address === undefined || port === undefined) continue;
    found.push({ host: connectable(address, family), port: parseInt(port, 16) });
  }
  return found;
}

/** The kernel prints addresses as host-order hex words; a wildcard bind is reached on loopback. */
function connectable(hex: string, family: 4 | 6): string {
  if (/^0+$/.test(hex)) return family === 4 ? '127.0.0.1' : '::1';
  if (family === 4) return Buffer.from(hex, 'hex').reverse().join('.');
  const bytes = Buffer.from(hex, 'hex');
  for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  const words = [];
  for (let i = 0; i < 16; i += 2) words.push(bytes.readUInt16BE(i).toString(16));
  const v6 = words.join(':');
  // An IPv4-mapped address (::ffff:127.0.0.1) is reachable over IPv4.
  return v6.startsWith('0:0:0:0:0:ffff:')
    ? Buffer.from(hex.slice(24), 'hex').reverse().join('.')
    : v6;
}

/**
 * CPU ticks used so far by each process in the sandbox other than `except` (its own pid
 * namespace: /proc lists only the sandbox's processes).
 */
export function cpuTicks(except: number): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === except) continue;
    const stat = readBounded(`/proc/${pid}/stat`, STAT_BYTES);
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const used = Number(rest[11]) + Number(rest[12]);
    if (Number.isFinite(used)) ticks.set(pid, used);
  }
  return ticks;
}

/** A file of the app's making, read once and never past the cap; one that is gone is empty. */
function readBounded(path: string, cap: number): string {
  const buf = Buffer.alloc(cap);
  let size = 0;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    while (size < buf.length) {
      const n = readSync(fd, buf, size, buf.length - size, null);
      if (n === 0) break;
      size += n;
    }
  } catch (err) {
    // A process that exited between readdir and read, or a table this kernel lacks.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ESRCH') throw err;
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return buf.subarray(0, size).toString('latin1');
}
