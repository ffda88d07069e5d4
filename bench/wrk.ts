import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What one wrk run measured. */
export interface WrkResult {
  rps: number;
  p99Ms: number;
  /** Non-2xx/3xx answers and socket errors. */
  errors: number;
}

export interface WrkOptions {
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /**
   * A first run this long, not measured: the rows compare steady states, not a fresh process's
   * first seconds (JIT, pools refilling after a deploy) against a warm baseline.
   */
  warmupSeconds?: number;
}

/**
 * A native closed-loop load generator (wrk, from the README's packages): two threads, `connections`
 * keep-alive connections, for `seconds`. The client is not the bottleneck of either side.
 */
export async function wrk(url: string, opts: WrkOptions): Promise<WrkResult> {
  if (opts.warmupSeconds) await once(url, { ...opts, seconds: opts.warmupSeconds });
  return once(url, opts);
}

async function once(url: string, opts: WrkOptions): Promise<WrkResult> {
  const args = ['-t2', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  // wrk adds its own `Host` unless one is given under exactly that name.
  for (const [name, value] of Object.entries(opts.headers ?? {})) {
    args.push('-H', `${name.toLowerCase() === 'host' ? 'Host' : name}: ${value}`);
  }
  const { stdout } = await run('wrk', [...args, url], { timeout: (opts.seconds + 30) * 1000 });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? NaN);
  const p99 = /99%\s+([\d.]+)(us|ms|s)\b/.exec(stdout);
  const scale = { us: 0.001, ms: 1, s: 1000 }[(p99?.[2] ?? 'ms') as 'us' | 'ms' | 's'];
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    stdout,
  );
  const socketErrors = socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0;
  if (!Number.isFinite(rps)) throw new Error(`wrk said nothing measurable: ${stdout}`);
  return { rps, p99Ms: Number(p99?.[1] ?? NaN) * scale, errors: non2xx + socketErrors };
}
