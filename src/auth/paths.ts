/**
 * The spec's table of protected paths. A request URL is read in every form that a router could
 * plausibly route it as (raw, percent-decoded, lower-cased, slashes collapsed, dot segments
 * resolved, query or `;` parameters cut off); it is protected when ANY form is. Over-protecting a
 * strange URL costs a 401; under-protecting it would hand out a protected handler.
 */

/** True when a request for `url` needs a valid identity (auth enabled). */
export function isProtectedPath(url: string): boolean {
  return isProtectedForms(pathForms(url));
}

/** `isProtectedPath` of the forms `pathForms` found, for a caller that needs them as well. */
export const isProtectedForms = (forms: readonly string[]): boolean => forms.some(isProtectedForm);

/** True when `url` is at or under /api, /v1, /mcp or /internal/sources: no login route may live there. */
export function isReservedPath(url: string): boolean {
  return pathForms(url).some((p) => RESERVED.some((prefix) => under(p, prefix)));
}

const PROTECTED = ['/mcp', '/api', '/v1', '/internal/sources'];
const RESERVED = PROTECTED;
/** Under a protected prefix, yet open by the spec. */
const OPEN_EXACT = new Set(['/api/auth']);
const OPEN_PREFIX = ['/api/share'];

function isProtectedForm(path: string): boolean {
  if (!PROTECTED.some((prefix) => under(path, prefix))) return false;
  if (OPEN_EXACT.has(path)) return false;
  // `/api/share` itself routes nowhere, so only paths strictly below it are open.
  return !OPEN_PREFIX.some(
    (prefix) => path.startsWith(`${prefix}/`) && path.length > prefix.length + 1,
  );
}

/** Non-empty segments of unreserved characters, none of them `.` or `..`. */
const SIMPLE_PATH = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9._~-]+)*\/?$/;

const under = (path: string, prefix: string): boolean =>
  path === prefix || path.startsWith(`${prefix}/`);

/** Every form of the URL's path worth checking; always includes the plain path. */
export function pathForms(url: string): string[] {
  const path = url.split('?')[0] ?? '';
  // Most requests: nothing to decode, no dot segments, no doubled slashes. Only case and a trailing
  // slash can vary, so skip the general (slower) expansion on this hot path.
  if (SIMPLE_PATH.test(path)) {
    const lower = path.toLowerCase();
    return [...new Set([path, lower, stripTrailing(path), stripTrailing(lower)])];
  }
  const forms = new Set<string>();
  for (const start of targets(url)) {
    const noQuery = start.split('?')[0] ?? '';
    for (const cut of [noQuery, noQuery.split('#')[0] ?? '', noQuery.split(';')[0] ?? '']) {
      let decoded = cut;
      // Repeat so that double encoding (`%252e`) is seen as well as a router that decodes twice.
      for (let i = 0; i < 4; i += 1) {
        addVariants(forms, decoded);
        const next = decodeAscii(decoded);
        if (next === decoded) break;
        decoded = next;
      }
    }
  }
  return [...forms];
}

/** The request target, plus the path of an absolute-form target (`GET http://host/v1/x`). */
function targets(url: string): string[] {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*(.*)$/i.exec(url);
  if (!match) return [url];
  return [url, match[1] === undefined || match[1] === '' ? '/' : (match[1] as string)];
}

function addVariants(forms: Set<string>, path: string): void {
  const slashes = path.replace(/\\/g, '/');
  for (const p of [path, slashes, slashes.toLowerCase(), path.toLowerCase()]) {
    const collapsed = p.replace(/\/{2,}/g, '/');
    forms.add(p);
    forms.add(collapsed);
    forms.add(resolveDots(collapsed));
    forms.add(stripTrailing(resolveDots(collapsed)));
  }
}

/** Decodes `%XX` sequences of ASCII characters only; malformed or non-ASCII escapes stay as they are. */
function decodeAscii(path: string): string {
  return path.replace(/%([0-7][0-9a-fA-F])/g, (_m, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}

/** RFC 3986 remove_dot_segments, on a path that always starts with `/`. */
function resolveDots(path: string): string {
  const out: string[] = [];
  const segments = (path.startsWith('/') ? path : `/${path}`).split('/').slice(1);
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    if (segment === '.' || segment === '..') {
      if (segment === '..') out.pop();
      if (last) out.push('');
      return;
    }
    out.push(segment);
  });
  return `/${out.join('/')}`;
}

const stripTrailing = (path: string): string =>
  path.length > 1 ? path.replace(/\/+$/, '') || '/' : path;
