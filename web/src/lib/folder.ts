import type { PackFile } from './tar';

/** Folders never worth uploading: version control metadata. */
const SKIPPED = new Set(['.git']);

/** Files picked through `<input webkitdirectory>`: their paths start with the folder's name. */
export function filesOfInput(list: FileList): { root: string; files: PackFile[] } {
  const files: PackFile[] = [];
  let root = '';
  for (const file of Array.from(list)) {
    const [first = '', ...rest] = file.webkitRelativePath.split('/');
    root ||= first;
    if (rest.some((segment) => SKIPPED.has(segment))) continue;
    files.push({ path: rest.join('/') || file.name, file });
  }
  return { root, files };
}

/** Files of a folder dropped on the page, walked with the File System entries API. */
export async function filesOfEntry(entry: FileSystemDirectoryEntry): Promise<PackFile[]> {
  const files: PackFile[] = [];
  const walk = async (dir: FileSystemDirectoryEntry, prefix: string): Promise<void> => {
    for (const child of await readAll(dir)) {
      if (SKIPPED.has(child.name)) continue;
      const path = prefix + child.name;
      if (child.isDirectory) await walk(child as FileSystemDirectoryEntry, `${path}/`);
      else files.push({ path, file: await fileOf(child as FileSystemFileEntry) });
    }
  };
  await walk(entry, '');
  return files;
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
