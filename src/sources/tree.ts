import { badRequest } from '../errors.js';
import { ancestorsOf, joinWithin, normalizeEntryPath, parentOf, quote, segments } from './paths.js';

export type NodeKind = 'file' | 'dir' | 'symlink' | 'hardlink';

/** The header fields the checker reads; tar-stream's `Headers` satisfies it. */
export interface EntryHeader {
  name: string;
  type?: string | null;
  linkname?: string | null;
}

/**
 * Builds the tree a tarball would extract to, one entry at a time, and refuses every entry that
 * could reach outside it or is not a file, directory or link. Later entries replace earlier ones at
 * the same path, as tar does; `finish()` then re-checks the final tree as a whole.
 */
export class SourceTree {
  entryCount = 0;
  private readonly nodes = new Map<string, Node>();

  constructor(private readonly maxEntries: number) {}

  /** Validates one entry against the tree so far and records it. */
  add(header: EntryHeader): { path: string; kind: NodeKind } {
    this.entryCount += 1;
    if (this.entryCount > this.maxEntries) {
      throw badRequest(`source tarball has more than ${this.maxEntries} entries`, {
        maxEntries: this.maxEntries,
      });
    }
    const kind = kindOf(header);
    const path = normalizeEntryPath(header.name);
    if (path === '') {
      // `./` is the root directory itself; anything else with no name cannot be extracted.
      if (kind === 'dir') return { path, kind };
      throw badRequest(`tar entry ${quote(header.name)} has an empty path`);
    }
    this.checkAncestors(path);
    const target = header.linkname ?? '';
    if (kind === 'symlink') checkSymlinkTarget(path, target);
    if (kind === 'hardlink') this.checkHardlinkTarget(path, target);
    this.nodes.set(path, kind === 'symlink' ? { kind, target } : { kind });
    return { path, kind };
  }

  /**
   * Re-checks the final tree: no entry under a symlink or a file, and every symlink resolves inside
   * the root when followed through the other symlinks (a purely lexical check misses
   * `t -> d/l/../..` where `d/l -> ..`). Returns the sorted paths of regular files.
   */
  finish(): string[] {
    const files: string[] = [];
    for (const [path, node] of this.nodes) {
      this.checkAncestors(path);
      if (node.kind === 'symlink') this.checkResolvesInside(path, node.target);
      if (node.kind === 'file' || node.kind === 'hardlink') files.push(path);
    }
    return files.sort();
  }

  private checkAncestors(path: string): void {
    for (const ancestor of ancestorsOf(path)) {
      const kind = this.nodes.get(ancestor)?.kind;
      // Writing through a symlink is how extractors get tricked into writing outside the tree.
      if (kind === 'symlink' || kind === 'file' || kind === 'hardlink') {
        const what = kind === 'symlink' ? 'a symlink' : 'a file';
        throw badRequest(`tar entry ${quote(path)} is inside ${quote(ancestor)}, which is ${what}`);
      }
    }
  }

  private checkHardlinkTarget(path: string, target: string): void {
    // A hardlink names another member of the archive, so its target is relative to the root.
    if (target === '' || target.startsWith('/') || segments(target).includes('..')) {
      throw badRequest(`hardlink ${quote(path)} -> ${quote(target)} leaves the source tree`);
    }
    const targetPath = segments(target).join('/');
    const kind = this.nodes.get(targetPath)?.kind;
    if (targetPath === path || (kind !== 'file' && kind !== 'hardlink')) {
      throw badRequest(
        `hardlink ${quote(path)} -> ${quote(target)} does not point to a regular file earlier in the archive`,
      );
    }
  }

  private checkResolvesInside(path: string, target: string): void {
    const stack = parentOf(path) === '' ? [] : parentOf(path).split('/');
    let queue = segments(target);
    let hops = 0;
    while (queue.length > 0) {
      const [part, ...rest] = queue as [string, ...string[]];
      queue = rest;
      if (part === '..') {
        if (stack.pop() === undefined) throw escapes(path, target);
        continue;
      }
      stack.push(part);
      const node = this.nodes.get(stack.join('/'));
      if (node?.kind !== 'symlink') continue;
      hops += 1;
      if (hops > MAX_SYMLINK_HOPS) {
        throw badRequest(`symlink ${quote(path)} -> ${quote(target)} is part of a symlink loop`);
      }
      stack.pop();
      queue = [...segments(node.target), ...queue];
    }
  }
}

/** As Linux's limit on symlinks followed in one lookup (ELOOP). */
const MAX_SYMLINK_HOPS = 40;

type Node = { kind: 'symlink'; target: string } | { kind: Exclude<NodeKind, 'symlink'> };

function kindOf(header: EntryHeader): NodeKind {
  switch (header.type) {
    case 'file':
    case 'contiguous-file': // a regular file to every extractor that still meets one
      return 'file';
    case 'directory':
      return 'dir';
    case 'symlink':
      return 'symlink';
    case 'link':
      return 'hardlink';
    case 'character-device':
    case 'block-device':
      throw refused(header.name, `is a ${header.type.replace('-', ' ')}`);
    case 'fifo':
      throw refused(header.name, 'is a fifo');
    default:
      throw refused(header.name, `has an unsupported entry type (${header.type ?? 'unknown'})`);
  }
}

function checkSymlinkTarget(path: string, target: string): void {
  if (target === '' || target.includes('\0')) {
    throw badRequest(`symlink ${quote(path)} has an empty or invalid target`);
  }
  if (target.startsWith('/')) {
    throw badRequest(
      `symlink ${quote(path)} points to the absolute path ${quote(target)}; link targets must be relative and stay inside the tree`,
    );
  }
  // A symlink's target is relative to the directory holding the link.
  if (joinWithin(parentOf(path), target) === undefined) throw escapes(path, target);
}

function escapes(path: string, target: string) {
  return badRequest(`symlink ${quote(path)} -> ${quote(target)} leaves the source tree`);
}

function refused(name: string, what: string) {
  return badRequest(
    `tar entry ${quote(name)} ${what}; sources may hold only files, directories and links`,
  );
}
