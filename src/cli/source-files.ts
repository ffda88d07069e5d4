import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';

/** Never uploaded: history and installed dependencies are not the app's source. */
const ALWAYS_LEFT_OUT = new Set(['.git', 'node_modules']);
/** Read in every folder, in this order: a later file's `!pattern` can take back an earlier one. */
const IGNORE_FILES = ['.gitignore', '.slipwayignore'];

/** The rules of one folder's ignore files, which match paths relative to that folder. */
interface FolderRules {
  base: string;
  rules: Ignore;
}

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
  const here = await folderRules(
    root,
    rel,
    new Set(entries.filter((e) => e.isFile()).map((e) => e.name)),
  );
  const stack = here ? [...outer, here] : outer;
  for (const entry of entries) {
    if (ALWAYS_LEFT_OUT.has(entry.name)) continue;
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    const isDir = entry.isDirectory();
    if (ignored(stack, path, isDir)) continue;
    if (isDir) await walk(root, path, stack, files);
    else if (entry.isFile() || entry.isSymbolicLink()) files.push(path);
  }
}

async function folderRules(
  root: string,
  rel: string,
  names: Set<string>,
): Promise<FolderRules | undefined> {
  const present = IGNORE_FILES.filter((name) => names.has(name));
  if (present.length === 0) return undefined;
  const rules = ignore();
  for (const name of present) rules.add(await readFile(join(root, rel, name), 'utf8'));
  return { base: rel, rules };
}

function ignored(stack: FolderRules[], path: string, isDir: boolean): boolean {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { base, rules } = stack[i] as FolderRules;
    const inner = base ? path.slice(base.length + 1) : path;
    // `ignore` tells a folder from a file by the trailing slash (for patterns such as `dist/`).
    const verdict = rules.test(isDir ? `${inner}/` : inner);
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}
