import { badRequest } from '../errors.js';

/**
 * Path rules for tar entries. Every path is relative to the root the agent extracts into; '' is that
 * root itself. Checks are on names only, so what they accept is safe for any extractor that does
 * not follow symlinks it has just created (the tree checker forbids entries under a symlink).
 */

/** A file name longer than this (bytes) cannot exist on Linux: NAME_MAX. */
export const MAX_SEGMENT_BYTES = 255;
/** A whole path longer than this (bytes) is refused: far below PATH_MAX once under /app. */
export const MAX_PATH_BYTES = 1024;

/**
 * Normalises an entry name to `a/b/c`: drops `.` segments, empty segments and trailing slashes.
 * Refuses absolute names, `..` segments, NUL bytes and names the file system cannot hold (a
 * segment over 255 bytes, a path over 1,024), naming the entry.
 */
export function normalizeEntryPath(name: string): string {
  if (name.includes('\0')) throw badRequest(`tar entry ${quote(name)} has a NUL byte in its name`);
  if (name.startsWith('/')) {
    throw badRequest(`tar entry ${quote(name)} has an absolute path; paths must be relative`);
  }
  const parts = segments(name);
  if (parts.includes('..')) {
    throw badRequest(
      `tar entry ${quote(name)} has a '..' segment; paths must stay inside the tree`,
    );
  }
  const shown = quote(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  if (parts.some((part) => Buffer.byteLength(part) > MAX_SEGMENT_BYTES)) {
    throw badRequest(
      `tar entry ${shown} has a name over ${MAX_SEGMENT_BYTES} bytes; no file system holds it`,
    );
  }
  const path = parts.join('/');
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) {
    throw badRequest(`tar entry ${shown} has a path over ${MAX_PATH_BYTES} bytes`);
  }
  return path;
}

/** The directory part of a normalised path ('' for a top-level entry). */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? '' : path.slice(0, slash);
}

/** Every proper ancestor of a normalised path, nearest last: `a/b/c` → `a`, `a/b`. */
export function ancestorsOf(path: string): string[] {
  const parts = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i += 1) out.push(parts.slice(0, i).join('/'));
  return out;
}

/**
 * Lexically joins a relative link target onto a base directory. Returns undefined when the result
 * climbs above the root: `..` there would leave the tree.
 */
export function joinWithin(base: string, target: string): string | undefined {
  const stack = base === '' ? [] : base.split('/');
  for (const part of segments(target)) {
    if (part === '..') {
      if (stack.length === 0) return undefined;
      stack.pop();
    } else {
      stack.push(part);
    }
  }
  return stack.join('/');
}

/** JSON-quotes a user-supplied name so control characters cannot forge a message. */
export function quote(name: string): string {
  return JSON.stringify(name);
}

/** The non-empty, non-`.` segments of a path; `..` is kept for the caller to judge. */
export function segments(path: string): string[] {
  return path.split('/').filter((part) => part !== '' && part !== '.');
}
