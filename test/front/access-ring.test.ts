/**
 * Following HAProxy's access ring over its runtime API (a unix socket that speaks the same lines
 * here): only direct requests' lines are handed on, a line past the ring's own bound is dropped
 * without the buffer growing with it, and the reading starts again when the API closes it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ACCESS_LINE_BYTES,
  followAccessRing,
  parseAccessLine,
  type RingLine,
} from '../../src/front/haproxy/access-ring.js';

const dir = mkdtempSync(join(tmpdir(), 'slipway-access-ring-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the access ring', () => {
  it('parses a direct request, and nothing else', () => {
    expect(parseAccessLine('slot_3 200 12 GET web.apps.test /a/b')).toEqual({
      host: 'web.apps.test',
      method: 'GET',
      path: '/a/b',
      status: 200,
      ms: 12,
    });
    expect(parseAccessLine('control 200 1 GET localhost /v1/apps')).toBeUndefined();
    expect(parseAccessLine('slot_1 200 1 GET web.apps.test')).toBeUndefined();
    expect(parseAccessLine('')).toBeUndefined();
  });

  it('hands on direct lines, drops an overlong one, and reads again after the API closed', async () => {
    const socket = join(dir, 'admin.sock');
    const commands: string[] = [];
    const connections: net.Socket[] = [];
    let connected: (() => void) | undefined;
    const api = net.createServer((conn) => {
      conn.setEncoding('utf8');
      conn.once('data', (command: string) => {
        commands.push(command);
        connections.push(conn);
        connected?.();
      });
    });
    await new Promise<void>((resolve) => api.listen(socket, resolve));
    const nextConnection = (): Promise<void> => new Promise((resolve) => (connected = resolve));

    const got: RingLine[] = [];
    let arrived: (() => void) | undefined;
    const first = nextConnection();
    const ring = followAccessRing(
      socket,
      (line) => {
        got.push(line);
        arrived?.();
      },
      () => undefined,
    );
    try {
      await first;
      expect(commands).toEqual(['show events access -w -n\n']);
      const conn = connections[0] as net.Socket;
      const twoLines = new Promise<void>((resolve) => {
        arrived = () => got.length === 2 && resolve();
      });
      conn.write('slot_0 200 3 GET a.apps.test /one\ncontrol 503 0 GET a.apps.test /x\n');
      // Longer than any line the ring holds, in pieces: dropped, never buffered whole.
      const long = `slot_0 200 3 GET a.apps.test /${'x'.repeat(ACCESS_LINE_BYTES)}`;
      conn.write(long.slice(0, ACCESS_LINE_BYTES / 2));
      conn.write(long.slice(ACCESS_LINE_BYTES / 2));
      conn.write('\nslot_1 404 7 POST b.apps.test /two\n');
      await twoLines;
      expect(got.map((l) => l.path)).toEqual(['/one', '/two']);

      const again = nextConnection();
      conn.end();
      await again;
      expect(commands).toHaveLength(2);
    } finally {
      ring.stop();
      for (const conn of connections) conn.destroy();
      api.close();
    }
  });
});
