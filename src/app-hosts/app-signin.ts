import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../errors.js';
import type { Store } from '../persistence/store.js';
import type { Admission, Refusal } from './app-access.js';
import { escapeHtml } from '../http/share-page.js';

// The answer of a private app's host to a request without a grant (app-access.ts): a small HTML
// page for browsers, the spec's error body for everyone else (chosen by `Accept`), both 401. It
// says the app is private and how to get in; it never names a token, a code or a cookie value.

/** Answers a request the access check did not pass: a refusal, or the redirect after a grant. */
export function answerAdmission(
  res: ServerResponse,
  req: IncomingMessage,
  name: string,
  admission: Exclude<Admission, { kind: 'pass' }>,
): void {
  if (admission.kind === 'refuse') {
    return refuse(res, req, { name, backend: admission.backend }, admission.why);
  }
  // 303 to the front page: the code leaves the address bar (and the history) at once.
  const headers: Record<string, string> = {
    location: '/',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'content-length': '0',
  };
  if (admission.cookie !== '') headers['set-cookie'] = admission.cookie;
  res.writeHead(303, headers);
  res.end();
}

export function refuse(
  res: ServerResponse,
  req: IncomingMessage,
  app: { name: string; backend: Store['backend'] },
  why: Refusal,
): void {
  const message = messageOf(app, why);
  const headers: Record<string, string> = {
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'www-authenticate': `Bearer realm="${app.name}"`,
  };
  if (wantsHtml(req)) {
    const body = signInPage(app.name, why, message);
    res.writeHead(401, {
      ...headers,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': CSP,
      'content-length': Buffer.byteLength(body),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  const error = new AppError(401, 'unauthenticated', message, { app: app.name, access: 'private' });
  const body = JSON.stringify(error.toBody());
  res.writeHead(401, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The refusal of a websocket (or other) upgrade: no body, the connection closes. */
export function refuseUpgrade(name: string): string {
  return (
    'HTTP/1.1 401 Unauthorized\r\n' +
    `WWW-Authenticate: Bearer realm="${name}"\r\n` +
    'Connection: close\r\nContent-Length: 0\r\n\r\n'
  );
}

/** Nothing runs, loads or frames it: text and inline style only. */
const CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function messageOf(app: { name: string; backend: Store['backend'] }, why: Refusal): string {
  if (why === 'code') {
    return (
      `This link to the app "${app.name}" was already used or has expired. ` +
      'Open the share link you were given again.'
    );
  }
  const owner =
    `The app "${app.name}" is private. Its owner, or an admin, opens it with their Slipway ` +
    'token sent as "Authorization: Bearer <token>".';
  // Share links live only in the SQLite store (ShareService): elsewhere nobody else gets in.
  if (app.backend !== 'sqlite') {
    return (
      `${owner} This server keeps no share links (store.backend: ${app.backend}), so nobody ` +
      'else can be let in.'
    );
  }
  return `${owner} Anyone else needs a share link from the owner: opening it lets you in.`;
}

function wantsHtml(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && /\btext\/html\b/i.test(accept);
}

function signInPage(name: string, why: Refusal, message: string): string {
  const title = why === 'code' ? 'Link used or expired' : 'This app is private';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}: ${escapeHtml(name)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0; padding: 2rem 1.5rem; color: #1b1f24; }
main { max-width: 36rem; margin: 0 auto; }
</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p id="message">${escapeHtml(message)}</p></main></body></html>
`;
}
