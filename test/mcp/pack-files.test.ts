import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { decodeTarball, packFiles } from '../../src/mcp/pack-files.js';
import { inspectTarball } from '../../src/sources/tarball.js';

const MB = 1024 * 1024;

interface Entry {
  name: string;
  mode?: number;
  mtime?: Date;
  uid?: number;
  type?: string | null;
  body: Buffer;
}

async function entriesOf(gz: Buffer): Promise<Entry[]> {
  const extract = tar.extract();
  const out: Entry[] = [];
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      out.push({ ...header, body: Buffer.concat(chunks) });
      next();
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    extract.on('finish', () => resolve());
    extract.on('error', reject);
  });
  Readable.from([gunzipSync(gz)]).pipe(extract);
  await done;
  return out;
}

async function refusal(run: () => Promise<unknown>): Promise<AppError> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('packFiles: a files map to a deterministic tarball', () => {
  it('packs the same files to the same bytes whatever the key order', async () => {
    const a = await packFiles({ 'b.js': 'B', 'a/x.js': 'X', 'index.js': 'I' }, MB);
    const b = await packFiles({ 'index.js': 'I', 'b.js': 'B', 'a/x.js': 'X' }, MB);
    expect(a.equals(b)).toBe(true);
    const c = await packFiles({ 'index.js': 'I', 'b.js': 'B', 'a/x.js': 'Y' }, MB);
    expect(a.equals(c)).toBe(false);
  });

  it('writes sorted, normalised paths with fixed mtime, mode and owner', async () => {
    const gz = await packFiles({ 'z.txt': 'z', './src//m.js': 'm', 'src/a.js': 'a' }, MB);
    const entries = await entriesOf(gz);
    expect(entries.map((e) => e.name)).toEqual(['src/a.js', 'src/m.js', 'z.txt']);
    for (const entry of entries) {
      expect(entry).toMatchObject({ type: 'file', mode: 0o644, uid: 0 });
      expect(entry.mtime?.toISOString()).toBe('2000-01-01T00:00:00.000Z');
    }
  });

  it('decodes utf8 and base64 content; the result passes the upload inspector', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const gz = await packFiles(
      {
        'text.txt': 'héllo',
        'explicit.txt': { content: 'plain', encoding: 'utf8' },
        'bin.dat': { content: bytes.toString('base64'), encoding: 'base64' },
        'default.txt': { content: 'no encoding given' },
      },
      MB,
    );
    const byName = new Map((await entriesOf(gz)).map((e) => [e.name, e.body]));
    expect(byName.get('text.txt')?.toString('utf8')).toBe('héllo');
    expect(byName.get('explicit.txt')?.toString()).toBe('plain');
    expect(byName.get('bin.dat')?.equals(bytes)).toBe(true);
    expect(byName.get('default.txt')?.toString()).toBe('no encoding given');
    const info = await inspectTarball(gz);
    expect(info.files).toEqual(['bin.dat', 'default.txt', 'explicit.txt', 'text.txt']);
  });

  it.each([
    ['../up.js', "'..' segment"],
    ['a/../../up.js', "'..' segment"],
    ['/abs.js', 'absolute'],
    ['nul\0.js', 'NUL'],
    ['./', 'names no file'],
  ])('refuses the path %j with bad_request naming it', async (path, words) => {
    const err = await refusal(() => packFiles({ [path]: 'x' }, MB));
    expect(err).toMatchObject({ status: 400, code: 'bad_request' });
    expect(err.message).toContain(words);
    expect(err.message).toContain(JSON.stringify(path));
  });

  it('refuses a path given twice and a file that is another file’s directory', async () => {
    const twice = await refusal(() => packFiles({ 'a.js': '1', './a.js': '2' }, MB));
    expect(twice.message).toContain('same file');
    const clash = await refusal(() => packFiles({ lib: '1', 'lib/x.js': '2' }, MB));
    expect(clash.message).toContain('files["lib"] is a file');
  });

  it('refuses an empty map and content that is not base64', async () => {
    expect(await refusal(() => packFiles({}, MB))).toMatchObject({ code: 'missing_source' });
    const bad = await refusal(() => packFiles({ x: { content: 'a$b=', encoding: 'base64' } }, MB));
    expect(bad).toMatchObject({ code: 'bad_request', details: { field: 'files["x"]' } });
  });

  it('answers 413 when the packed source is over the cap', async () => {
    // Random bytes do not compress: the packed size stays above the 1 KiB cap.
    const noise = randomBytes(64 * 1024);
    const err = await refusal(() =>
      packFiles({ 'noise.bin': { content: noise.toString('base64'), encoding: 'base64' } }, 1024),
    );
    expect(err).toMatchObject({ status: 413, code: 'payload_too_large' });
  });
});

describe('decodeTarball: tarball_base64', () => {
  it('decodes base64, ignoring line breaks', () => {
    const data = Buffer.from('some bytes here!');
    const wrapped = data.toString('base64').replace(/(.{8})/g, '$1\n');
    expect(decodeTarball(wrapped, MB).equals(data)).toBe(true);
  });

  it('refuses what is not base64, and an empty string', () => {
    expect(() => decodeTarball('not base64!', MB)).toThrow(/not valid base64/);
    expect(() => decodeTarball('abc', MB)).toThrow(/not valid base64/);
    expect(() => decodeTarball('  ', MB)).toThrow(
      expect.objectContaining({ code: 'missing_source' }),
    );
  });

  it('answers 413 above the cap, at the exact decoded size', () => {
    const exact = Buffer.alloc(1000).toString('base64');
    expect(decodeTarball(exact, 1000)).toHaveLength(1000);
    expect(() => decodeTarball(exact, 999)).toThrow(
      expect.objectContaining({ status: 413, code: 'payload_too_large' }),
    );
  });
});
