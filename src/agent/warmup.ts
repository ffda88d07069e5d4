import { rmSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import net from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  AGENT_SOCK,
  APP_PORT,
  SOCKET_DIR,
  WARMUP_DIR,
  WARMUP_KEY,
  type Template,
} from './protocol.js';
import { pullAndUnpack } from './unpack.js';
import { accepts } from './wait-port.js';

type Load = (request: string, parent: null, isMain: boolean) => unknown;

/** V8 compiles lazily and tiers up late: one pass leaves the second run still cold in places. */
const ROUNDS = 3;

/**
 * A rehearsal of the inject at boot, once agent.sock listens: POST to our own control API, pull and
 * unpack the warm-up tarball through the same door, load its modules the way an app is loaded,
 * probe the app port. In a fresh process each of these first costs several ms; here it is paid
 * while the sandbox is idle, not on the deploy path.
 */
export async function warmUp(template: Template, token: string): Promise<void> {
  for (let round = 0; round < ROUNDS; round += 1) {
    await postToSelf(token);
    await pullAndUnpack(WARMUP_KEY, token, WARMUP_DIR);
    await accepts('127.0.0.1', APP_PORT, 100);
    rmSync(WARMUP_DIR, { recursive: true, force: true });
  }
  if (template === 'node') {
    await pullAndUnpack(WARMUP_KEY, token, WARMUP_DIR);
    const cjs = join(WARMUP_DIR, 'warm', 'index.cjs');
    (Module as unknown as { _load: Load })._load(cjs, null, false);
    // Out of the cache again: the app must never see the rehearsal's modules.
    delete createRequire(import.meta.url).cache[cjs];
    await import(pathToFileURL(join(WARMUP_DIR, 'warm', 'index.mjs')).href);
    rmSync(WARMUP_DIR, { recursive: true, force: true });
  }
}

/** A JSON POST to our own agent.sock, as the host's inject call will make. */
function postToSelf(token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ warm: true, env: [{ name: 'A', value: 'b' }] });
    const socket = net.connect(`${SOCKET_DIR}/${AGENT_SOCK}`);
    socket.on('error', reject);
    socket.on('data', () => undefined); // drained: only the round trip matters
    socket.on('end', () => resolve());
    socket.end(
      `POST /warmup HTTP/1.1\r\nHost: agent\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
