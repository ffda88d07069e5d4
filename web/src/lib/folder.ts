import { ALWAYS_LEFT_OUT, IGNORE_FILES, pickSources } from '../../../src/sources/ignore-rules';
import type { PackFile } from './tar';

/** A folder's files as the CLI would upload them, and what was left out (files: how many). */
export interface FolderFiles {
  files: PackFile[];
  leftOut: LeftOut[];
}

export interface LeftOut {
  path: string;
  folder: boolean;
  /** Files under a left-out folder; absent for a folder that was not even walked. */
  files?: number;
}

/** Files picked through `<input webkitdirectory>`: their paths start with the folder's name. */
export async function filesOfInput(list: FileList): Promise<{ root: string } & FolderFiles> {
  const files: PackFile[] = [];
  let root = '';
  for (const file of Array.from(list)) {
    const [first = '', ...rest] = file.webkitRelativePath.split('/');
    root ||= first;
    files.push({ path: rest.join('/') || file.name, file });
  }
  return { root, ...(await sourcesOf(files, [])) };
}

/**
 * Files of a folder dropped on the page, walked with the File System entries API. Folders the CLI
 * never uploads (`.git`, `node_modules`) are not entered at all.
 */
export async function filesOfEntry(entry: FileSystemDirectoryEntry): Promise<FolderFiles> {
  const files: PackFile[] = [];
  const skipped: string[] = [];
  const walk = async (dir: FileSystemDirectoryEntry, prefix: string): Promise<void> => {
    for (const child of await readAll(dir)) {
      const path = prefix + child.name;
      if (child.isDirectory && ALWAYS_LEFT_OUT.has(child.name)) skipped.push(path);
      else if (child.isDirectory) await walk(child as FileSystemDirectoryEntry, `${path}/`);
      else files.push({ path, file: await fileOf(child as FileSystemFileEntry) });
    }
  };
  await walk(entry, '');
  return sourcesOf(files, skipped);
}

/** The CLI's rules (src/sources/ignore-rules.ts) applied to the files a browser handed over. */
async function sourcesOf(all: PackFile[], skipped: string[]): Promise<FolderFiles> {
  const texts = new Map<string, string>();
  for (const { path, file } of all) {
    if (IGNORE_FILES.includes(path.split('/').pop() ?? '')) texts.set(path, await file.text());
  }
  const byPath = new Map(all.map((f) => [f.path, f]));
  const picked = pickSources([...byPath.keys()], texts);
  return {
    files: picked.kept.map((path) => byPath.get(path) as PackFile),
    leftOut: [...skipped.map((path) => ({ path, folder: true })), ...picked.leftOut].sort((a, b) =>
      a.path.localeCompare(b.path),
    ),
  };
}

/** readEntries answers in batches; it is read until it answers an empty one. */
async function readAll(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const all: FileSystemEntry[] = [];
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
      reader.readEntries(resolve, reject),
    );
    if (batch.length === 0) return all;
    all.push(...batch);
  }
}

const fileOf = (entry: FileSystemFileEntry): Promise<File> =>
  new Promise((resolve, reject) => entry.file(resolve, reject));

/** A folder name made into an app name (the CLI does the same). */
export function appNameOf(folder: string): string {
  return folder
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
}
