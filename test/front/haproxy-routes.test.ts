/**
 * HaproxyRoutes' one runtime API call per route change, against a stand-in for HAProxy's admin
 * socket that answers as HAProxy does (each command's output, then a blank line): the slot's
 * counters are read in the same call, and a command HAProxy refuses fails the route and frees its
 * slot. The real HAProxy is in e2e/native-front-door.test.ts and e2e/app-metrics.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { haproxyPaths, type HaproxyPaths } from '../../src/front/haproxy/haproxy-config.js';
import { HaproxyRoutes } from '../../src/front/haproxy/haproxy-routes.js';

const HEADER = '# pxname,svname,scur,stot,hrsp_2xx';

let dir: string;
let paths: HaproxyPaths;
let admin: net.Server;
let commands: string[];
let answer: (command: string) => string;
let warnings: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'haproxy-routes-'));
  paths = haproxyPaths(dir);
  mkdirSync(paths.slots);
  commands = [];
  warnings = [];
  admin = net.createServer((conn) => {
    conn.once('data', (chunk) => {
      const sent = chunk.toString().trim().split('; ');
      commands.push(...sent);
      conn.end(sent.map((c) => `${answer(c)}\n`).join(''));
    });
  });
  await new Promise<void>((resolve) => admin.listen(paths.admin, resolve));
});
afterEach(async () => {
  await new Promise((resolve) => admin.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const routes = () =>
  new HaproxyRoutes(paths, 2, (level, msg) => {
    if (level === 'warn') warnings.push(msg);
  });
const stat = (command: string) => {
  const slot = /^show stat (slot_\d+) /.exec(command)?.[1];
  return slot ? `${HEADER}\n${slot},BACKEND,0,7,7\n` : '';
};

describe('a route change', () => {
  it('reads the slot’s counters and changes the route in one call, counters first', async () => {
    answer = stat;
    await routes().publish({ appId: 'web', host: 'web.apps.test', target: { socket: '/s' } });
    expect(commands).toEqual([
      'show stat slot_0 2 -1',
      'shutdown sessions server slot_0/app',
      'set server slot_0/app health up',
      `add map ${paths.map} web.apps.test slot_0`,
    ]);
    expect(warnings).toEqual([]);
  });

  it('fails when HAProxy refuses a command, and hands the slot out again', async () => {
    answer = (command) => (command.startsWith('set server') ? 'No such server.\n' : stat(command));
    const r = routes();
    await expect(
      r.publish({ appId: 'web', host: 'web.apps.test', target: { socket: '/s' } }),
    ).rejects.toThrow(/haproxy refused the route of web\.apps\.test: No such server\./);
    answer = stat;
    commands = [];
    await r.publish({ appId: 'web', host: 'web.apps.test', target: { socket: '/s' } });
    expect(commands[0]).toBe('show stat slot_0 2 -1');
  });

  it('routes, and says so, when the counters cannot be read', async () => {
    answer = (command) => (command.startsWith('show stat') ? 'No such backend.\n' : '');
    await routes().publish({ appId: 'web', host: 'web.apps.test', target: { socket: '/s' } });
    expect(commands.at(-1)).toBe(`add map ${paths.map} web.apps.test slot_0`);
    expect(warnings).toEqual(['front door counters not read']);
  });
});
