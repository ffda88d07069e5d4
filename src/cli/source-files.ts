import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ALWAYS_LEFT_OUT,
  folderRules,
  IGNORE_FILES,
  ignoredBy,
  type FolderRules,
} from '../sources/ignore-rules.js';

/**
 * The files of `root` to upload, as sorted `/`-separated relative paths: everything but `.git`,
 * `node_modules` and what `.gitignore` and `.slipwayignore` files (at any depth) leave out, with
 * git's precedence (the deepest file that has a say decides; an ignored folder is not entered).
 * Symlinks are listed, not followed.
 */
export async function sourceFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  await walk(root, '', [], files);
  return files.sort();
}

async function walk(
  root: string,
  rel: string,
  outer: FolderRules[],
  files: string[],
): Promise<void> {
  const entries = await readdir(join(root, rel), { withFileTypes: true });
  const here = await rulesOf(
    root,
    rel,
    new Set(entries.filter((e) => e.isFile()).map((e) => e.name)),
  );
  const stack = here ? [...outer, here] : outer;
  for (const entry of entries) {
    if (ALWAYS_LEFT_OUT.has(entry.name)) continue;
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    const isDir = entry.isDirectory();
    if (ignoredBy(stack, path, isDir)) continue;
    if (isDir) await walk(root, path, stack, files);
    else if (entry.isFile() || entry.isSymbolicLink()) files.push(path);
  }
}

async function rulesOf(
  root: string,
  rel: string,
  names: Set<string>,
): Promise<FolderRules | undefined> {
  const present = IGNORE_FILES.filter((name) => names.has(name));
  const texts = await Promise.all(present.map((name) => readFile(join(root, rel, name), 'utf8')));
  return folderRules(rel, texts);
}
