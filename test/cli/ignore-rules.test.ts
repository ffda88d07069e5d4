import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceFiles } from '../../src/cli/source-files.js';
import { IGNORE_FILES, pickSources } from '../../src/sources/ignore-rules.js';

/**
 * The CLI walks a disk and the dashboard gets a flat list of files from the browser; both apply
 * src/sources/ignore-rules.ts, and must pick the same files from the same folder.
 */
const TREE: Record<string, string> = {
  'index.html': '<p>hi</p>',
  '.env': 'DB_PASSWORD=hunter2',
  '.gitignore': '.env\n*.log\nbuild/\n!keep.log\n',
  '.slipwayignore': 'drafts/\n',
  'debug.log': 'x',
  'keep.log': 'kept by a negation in the same folder',
  'build/out.js': 'x',
  'drafts/a.md': 'x',
  'node_modules/dep/index.js': 'x',
  '.git/HEAD': 'ref: refs/heads/main',
  'src/app.js': 'x',
  'src/.gitignore': 'secret.json\n!debug-src.log\n',
  'src/secret.json': '{}',
  'src/debug-src.log': 'taken back by the deeper file',
  'src/node_modules/x.js': 'x',
  'docs/build/readme.md': 'ignored with its folder: build/ matches at any depth',
};

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'slipway-ignore-'));
  for (const [path, text] of Object.entries(TREE)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(root, join(e.parentPath, e.name)));
}

describe('the ignore rules the CLI and the dashboard share', () => {
  it('pick the same files from a flat list as the CLI does from the disk', async () => {
    const paths = await allFiles(root);
    const texts = new Map(
      paths
        .filter((p) => IGNORE_FILES.includes(p.split('/').pop() ?? ''))
        .map((p) => [p, readFileSync(join(root, p), 'utf8')]),
    );
    const picked = pickSources(paths, texts);
    expect(picked.kept).toEqual(await sourceFiles(root));
    expect(picked.kept).toEqual([
      '.gitignore',
      '.slipwayignore',
      'index.html',
      'keep.log',
      'src/.gitignore',
      'src/app.js',
      'src/debug-src.log',
    ]);
    expect(picked.leftOut).toEqual(
      expect.arrayContaining([
        { path: '.env', folder: false, files: 1 },
        { path: 'node_modules', folder: true, files: 1 },
        { path: '.git', folder: true, files: 1 },
        { path: 'build', folder: true, files: 1 },
        { path: 'docs/build', folder: true, files: 1 },
        { path: 'src/secret.json', folder: false, files: 1 },
      ]),
    );
  });
});
