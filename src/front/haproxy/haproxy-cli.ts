import net from 'node:net';

/** The longest a runtime API answer may be: `show stat` of the routed slots stays far below. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * Sends commands to HAProxy's runtime API (a stats socket at admin level, or the master CLI) and
 * returns its answer: one connection per call, closed by HAProxy once it has answered. Several
 * commands may go in one call, separated by `;`.
 */
export function haproxyCommand(
  socket: string,
  command: string,
  timeoutMs = 5_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: Error): void => {
      conn.destroy();
      reject(new Error(`haproxy runtime API (${command.split(' ', 2).join(' ')}): ${err.message}`));
    };
    conn.setTimeout(timeoutMs, () => fail(new Error(`no answer within ${timeoutMs} ms`)));
    conn.on('error', fail);
    conn.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) return fail(new Error('answer too long'));
      chunks.push(chunk);
    });
    conn.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    conn.end(`${command}\n`);
  });
}

/** A command that changes something: HAProxy answers nothing (or a blank line) when it worked. */
export async function haproxyChange(socket: string, command: string): Promise<void> {
  const answer = (await haproxyCommand(socket, command)).trim();
  if (answer !== '') throw new Error(`haproxy refused "${command}": ${answer.split('\n')[0]}`);
}
