import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { inspectTarball } from '../../src/sources/tarball.js';
import { tarGz, tarGzDir, tarOf, type TarEntries, type TarEntry } from '../support/tarball.js';
import { expectAppError } from './expect-app-error.js';

const examples = fileURLToPath(new URL('../../examples/', import.meta.url));

describe('inspectTarball: valid sources', () => {
  it('accepts each example and lists its regular files', async () => {
    const node = await inspectTarball(await tarGzDir(`${examples}node`));
    expect(node.files).toEqual(['README.md', 'package.json', 'server.js']);
    expect(node.packageJson).toMatchObject({ main: 'server.js' });
    const python = await inspectTarball(await tarGzDir(`${examples}python`));
    expect(python.files).toEqual(['README.md', 'app.py']);
    expect(python.packageJson).toBeUndefined();
    const site = await inspectTarball(await tarGzDir(`${examples}static`));
    expect(site.files).toEqual(['README.md', 'index.html', 'style.css']);
  });

  it('reads a source the same whether it is inflated in memory or streamed for its size', async () => {
    const entries: TarEntries = [
      ['pkg/', { type: 'dir' }],
      ['package.json', '{"main":"pkg/a.js"}'],
      ['pkg/a.js', 'a'],
      ['pkg/link', { type: 'symlink', target: 'a.js' }],
    ];
    const small = await inspectTarball(await tarGz([['big', 'x'.repeat(1000)], ...entries]));
    const large = await inspectTarball(await tarGz([['big', 'x'.repeat(1_100_000)], ...entries]));
    expect(small.files).toEqual(['big', 'package.json', 'pkg/a.js']);
    expect(large.files).toEqual(small.files);
    expect(large.packageJson).toEqual(small.packageJson);
    expect(large.entryCount).toBe(small.entryCount);
    expect(large.totalBytes - small.totalBytes).toBe(1_099_000);
  });

  it('hashes the compressed bytes with sha256, stably', async () => {
    const first = await tarGzDir(`${examples}node`);
    const second = await tarGzDir(`${examples}node`);
    expect(second.equals(first)).toBe(true);
    const expected = `sha256:${createHash('sha256').update(first).digest('hex')}`;
    expect((await inspectTarball(first)).hash).toBe(expected);
    expect((await inspectTarball(second)).hash).toBe(expected);
    expect(expected).toMatch(/^sha256:[0-9a-f]{64}$/);
    const other = await inspectTarball(await tarGz({ 'index.html': 'other' }));
    expect(other.hash).not.toBe(expected);
  });

  it('normalises names and counts entries and bytes', async () => {
    const info = await inspectTarball(
      await tarGz([
        ['./', { type: 'dir' }],
        ['./index.html', '<h1>hi</h1>'],
        ['a/', { type: 'dir' }],
        ['a//b/./c.txt', 'abc'],
      ]),
    );
    expect(info.files).toEqual(['a/b/c.txt', 'index.html']);
    expect(info.entryCount).toBe(4);
    expect(info.totalBytes).toBe('<h1>hi</h1>'.length + 3);
  });

  it('accepts links that stay inside the tree; hardlinks count as files', async () => {
    const info = await inspectTarball(
      await tarGz([
        ['a/b.txt', 'b'],
        ['link', { type: 'symlink', target: 'a/b.txt' }],
        ['a/up', { type: 'symlink', target: '../link' }],
        ['a/self', { type: 'symlink', target: '.' }],
        ['hard', { type: 'hardlink', target: 'a/b.txt' }],
      ]),
    );
    expect(info.files).toEqual(['a/b.txt', 'hard']);
    expect(info.entryCount).toBe(5);
  });

  it('reads long (pax) names and lets a later entry replace an earlier one', async () => {
    const long = `${'d'.repeat(120)}/${'f'.repeat(120)}.js`;
    const info = await inspectTarball(
      await tarGz([
        [long, 'x'],
        ['package.json', '{"main":"old.js"}'],
        ['package.json', '{"main":"new.js"}'],
      ]),
    );
    expect(info.files).toEqual([long, 'package.json']);
    expect(info.packageJson).toEqual({ main: 'new.js' });
  });

  it('parses only the root package.json, tolerating a BOM', async () => {
    const info = await inspectTarball(
      await tarGz({ 'package.json': '\uFEFF{"name":"x"}', 'sub/package.json': '{not json' }),
    );
    expect(info.packageJson).toEqual({ name: 'x' });
  });

  it('refuses a root package.json that is not a JSON object', async () => {
    const broken = await tarGz({ 'package.json': '{"main": "server.js",}' });
    await expectAppError(
      () => inspectTarball(broken),
      400,
      'bad_request',
      'package.json is not valid JSON',
    );
    const array = await tarGz({ 'package.json': '["server.js"]' });
    await expectAppError(
      () => inspectTarball(array),
      400,
      'bad_request',
      'must hold a JSON object',
    );
  });
});

describe('inspectTarball: refused entries', () => {
  const cases: Array<[string, TarEntries, string]> = [
    ['a ../ name', { '../x': 'x' }, '"../x" has a \'..\' segment'],
    ['a name climbing out after a/', { 'a/../../x': 'x' }, '"a/../../x"'],
    ['any .. segment, even one staying inside', { 'a/../b': 'x' }, '"a/../b"'],
    ['an absolute name', { '/etc/x': 'x' }, '"/etc/x" has an absolute path'],
    [
      'a symlink escaping',
      { evil: { type: 'symlink', target: '../../etc/passwd' } },
      'symlink "evil" -> "../../etc/passwd" leaves the source tree',
    ],
    [
      'an absolute symlink',
      { abs: { type: 'symlink', target: '/etc/passwd' } },
      'symlink "abs" points to the absolute path "/etc/passwd"',
    ],
    ['a nested symlink escaping', { 'd/l': { type: 'symlink', target: '../..' } }, 'symlink "d/l"'],
    [
      'a symlink escaping only when its chain is followed',
      [
        ['d/', { type: 'dir' }],
        ['d/l', { type: 'symlink', target: '..' }],
        ['t', { type: 'symlink', target: 'd/l/../..' }],
      ],
      'symlink "t" -> "d/l/../.." leaves the source tree',
    ],
    [
      'a hardlink escaping',
      { h: { type: 'hardlink', target: '../../etc/passwd' } },
      'hardlink "h" -> "../../etc/passwd" leaves the source tree',
    ],
    [
      'an absolute hardlink',
      { h: { type: 'hardlink', target: '/etc/passwd' } },
      'hardlink "h" -> "/etc/passwd"',
    ],
    [
      'a hardlink to nothing earlier',
      { h: { type: 'hardlink', target: 'later' }, later: 'x' },
      'hardlink "h" -> "later" does not point to a regular file',
    ],
    [
      'a character device',
      { 'dev/null': { type: 'character-device' } },
      '"dev/null" is a character device',
    ],
    ['a block device', { sda: { type: 'block-device' } }, '"sda" is a block device'],
    ['a fifo', { pipe: { type: 'fifo' } }, '"pipe" is a fifo'],
    [
      'a file written through a symlink',
      [
        ['sub/', { type: 'dir' }],
        ['l', { type: 'symlink', target: 'sub' }],
        ['l/x', 'x'],
      ],
      '"l/x" is inside "l", which is a symlink',
    ],
    [
      'a symlink replacing a directory that holds entries',
      [
        ['a/x', 'x'],
        ['a', { type: 'symlink', target: 'b' }],
      ],
      '"a/x" is inside "a", which is a symlink',
    ],
    [
      'an entry under a file',
      [
        ['f', 'x'],
        ['f/y', 'y'],
      ],
      '"f/y" is inside "f", which is a file',
    ],
    [
      'a symlink loop',
      { a: { type: 'symlink', target: 'b' }, b: { type: 'symlink', target: 'a' } },
      'symlink loop',
    ],
  ];

  it.each(cases)('refuses %s', async (_name, entries, message) => {
    const data = await tarGz([['index.html', 'ok'], ...pairs(entries)]);
    await expectAppError(() => inspectTarball(data), 400, 'bad_request', message);
  });

  // A source that unpacks to over a megabyte is streamed, not inflated in memory: the same rules.
  it.each(cases)(
    'refuses %s in a source streamed for its size',
    async (_name, entries, message) => {
      const data = await tarGz([['index.html', 'x'.repeat(1_100_000)], ...pairs(entries)]);
      await expectAppError(() => inspectTarball(data), 400, 'bad_request', message);
    },
  );
});

describe('inspectTarball: not a usable tarball', () => {
  const notGzip = 'source must be a gzipped tarball (application/gzip)';

  it('refuses bytes that are not gzip, with the exact message', async () => {
    for (const data of [
      Buffer.from('hello world'),
      Buffer.alloc(0),
      Buffer.from([0x1f]),
      await tarOf({ a: 'a' }),
    ]) {
      const error = await expectAppError(() => inspectTarball(data), 400, 'bad_request');
      expect(error.message).toBe(notGzip);
    }
  });

  it('refuses a truncated gzip stream as 400 wherever it is cut', async () => {
    const whole = await tarGz({ 'index.html': 'x'.repeat(50_000) }, { level: 0 });
    for (const cut of [10, 100, 1000, Math.floor(whole.length / 2), whole.length - 5]) {
      await expectAppError(
        () => inspectTarball(whole.subarray(0, cut)),
        400,
        'bad_request',
        /not a valid gzip stream|not a valid tar archive/,
      );
    }
    // Its last four bytes read as a huge inflated size: still a broken upload, not a 413.
    const lying = Buffer.concat([
      whole.subarray(0, whole.length / 2),
      Buffer.from([0xff, 0xff, 0xff, 0xff]),
    ]);
    await expectAppError(
      () => inspectTarball(lying),
      400,
      'bad_request',
      'not a valid gzip stream',
    );
  });

  it('refuses gzip of something that is not a tar archive', async () => {
    const text = gzipSync(Buffer.from('just some text\n'.repeat(100)));
    await expectAppError(() => inspectTarball(text), 400, 'bad_request', 'not a valid tar archive');
  });

  it('refuses a tar archive cut short inside a file', async () => {
    const tar = await tarOf({ 'index.html': 'x'.repeat(5000) });
    await expectAppError(
      () => inspectTarball(gzipSync(tar.subarray(0, 2048))),
      400,
      'bad_request',
      'not a valid tar archive',
    );
  });

  it('refuses an empty archive, or one with no regular files', async () => {
    for (const data of [
      gzipSync(Buffer.alloc(1024)),
      gzipSync(Buffer.alloc(0)),
      await tarGz({ 'a/': { type: 'dir' } }),
    ]) {
      await expectAppError(() => inspectTarball(data), 400, 'bad_request', 'contains no files');
    }
  });
});

function pairs(entries: TarEntries): Array<readonly [string, TarEntry]> {
  return Array.isArray(entries) ? [...entries] : Object.entries(entries);
}
