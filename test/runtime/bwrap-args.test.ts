import { describe, expect, it } from 'vitest';
import { AGENT_PATH, bwrapArgs } from '../../src/runtime/local/bwrap-args.js';

const layout = {
  socketDir: '/data/sandboxes/abc',
  agentFile: '/data/runtime/agent.mjs',
  etcDir: '/data/runtime/etc',
  node: '/usr/bin/node',
  systemDirs: [{ path: '/bin', symlinkTo: 'usr/bin' }, { path: '/lib64' }],
  extraReadOnly: [],
  hostname: 'slipway',
  tmpfsBytes: 64 * 1024 * 1024,
  dieWithParent: true,
};

/** [option, ...values] groups, in order. */
function binds(options: string[], flag: string): [string, string][] {
  const out: [string, string][] = [];
  options.forEach((o, i) => {
    if (o === flag) out.push([options[i + 1] as string, options[i + 2] as string]);
  });
  return out;
}

describe('bwrap args', () => {
  const { options, command } = bwrapArgs(layout);

  it('unshares everything, drops capabilities, clears the env, dies with its parent', () => {
    for (const flag of ['--unshare-all', '--die-with-parent', '--new-session', '--clearenv']) {
      expect(options).toContain(flag);
    }
    expect(options.slice(options.indexOf('--cap-drop'), options.indexOf('--cap-drop') + 2)).toEqual(
      ['--cap-drop', 'ALL'],
    );
    expect(options).not.toContain('--share-net');
    expect(command).toEqual(['/usr/bin/node', AGENT_PATH]);
  });

  it('outlives its parent only when it is to be adopted by the next start', () => {
    expect(bwrapArgs({ ...layout, dieWithParent: false }).options).not.toContain(
      '--die-with-parent',
    );
    expect(options).toContain('--new-session');
  });

  it('keeps --unshare-pid and --proc after every filesystem bind (bwrap 0.8)', () => {
    const lastBind = Math.max(
      ...options.flatMap((o, i) =>
        /^--(ro-)?bind(-try)?$|^--symlink$|^--tmpfs$|^--dev$/.test(o) ? [i] : [],
      ),
    );
    expect(options.indexOf('--unshare-pid')).toBeGreaterThan(lastBind);
    expect(options.indexOf('--proc')).toBeGreaterThan(options.indexOf('--unshare-pid'));
  });

  it('binds system dirs read-only, never /etc wholesale, home or the data dir', () => {
    const readOnly = [...binds(options, '--ro-bind'), ...binds(options, '--ro-bind-try')];
    expect(readOnly).toContainEqual(['/usr', '/usr']);
    expect(readOnly).toContainEqual(['/etc/ssl', '/etc/ssl']);
    expect(readOnly).toContainEqual(['/lib64', '/lib64']);
    expect(readOnly.map(([src]) => src)).not.toContain('/etc');
    expect(readOnly.some(([src]) => src.startsWith('/root') || src.startsWith('/home'))).toBe(
      false,
    );
    // From the data dir: only the agent file and the synthetic /etc files, read-only.
    for (const [src, dest] of readOnly.filter(([src]) => src.startsWith('/data'))) {
      expect(src === layout.agentFile || src.startsWith(`${layout.etcDir}/`), src).toBe(true);
      expect(dest === AGENT_PATH || dest.startsWith('/etc/'), dest).toBe(true);
    }
    expect(binds(options, '--symlink')).toContainEqual(['usr/bin', '/bin']);
  });

  it('makes the socket dir the only writable host bind, with private tmpfs /app and /tmp', () => {
    expect(binds(options, '--bind')).toEqual([[layout.socketDir, '/run/slipway']]);
    const tmpfs = options.flatMap((o, i) => (o === '--tmpfs' ? [options[i + 1]] : []));
    expect(tmpfs).toEqual(expect.arrayContaining(['/app', '/tmp']));
    expect(options[options.indexOf('--tmpfs') - 2]).toBe('--size');
    expect(options.slice(options.indexOf('--chdir'), options.indexOf('--chdir') + 2)).toEqual([
      '--chdir',
      '/app',
    ]);
    expect(options.slice(options.indexOf('--hostname'), options.indexOf('--hostname') + 2)).toEqual(
      ['--hostname', 'slipway'],
    );
  });
});
