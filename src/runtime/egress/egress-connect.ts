/** Dialling a vetted upstream for the egress gate, bounded in time. */
import net from 'node:net';

/** Tries the vetted addresses in the resolver's order, all within one deadline. */
export async function connectFirst(
  addresses: string[],
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  const deadline = Date.now() + timeoutMs;
  const failures: string[] = [];
  for (const address of addresses) {
    try {
      return await connectOnce(address, port, Math.max(1, deadline - Date.now()));
    } catch (err) {
      failures.push(`${address}: ${errorText(err)}`);
    }
  }
  throw new Error(failures.join('; '));
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function errorText(err: unknown): string {
  return err instanceof Error ? ((err as NodeJS.ErrnoException).code ?? err.message) : String(err);
}

function connectOnce(address: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // An address, not a name: net.connect does no lookup, so DNS cannot be rebound under us.
    const socket = net.connect({ host: address, port, allowHalfOpen: true });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    // Stays attached for the socket's life; once connected, reject is a no-op and splice reacts.
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
  });
}
