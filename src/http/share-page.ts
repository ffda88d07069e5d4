import type { ShareView } from '../services/share-links.js';

/**
 * The public page of a share link, `/share/{token}`: one self-contained HTML document (no external
 * assets). An open link shows the app at once; a protected one shows a password form whose script
 * POSTs to `/api/share/{token}` and then shows the app. A private app is never framed: an open
 * link's page links `/share/{token}/open`, and the script sends the tab to the app's `grant_url`. Every value is escaped where it lands, and
 * the script builds the revealed view with textContent and attributes, never with HTML strings.
 */
export type SharePage =
  | { kind: 'open'; view: ShareView; token: string }
  | { kind: 'protected'; name: string; token: string; nonce: string }
  | { kind: 'error'; title: string; message: string };

export function renderSharePage(page: SharePage): string {
  switch (page.kind) {
    case 'open':
      return documentOf(escapeHtml(page.view.name), appSection(page.view, page.token));
    case 'protected':
      return documentOf(
        escapeHtml(page.name),
        passwordSection(page.name, page.token),
        unlockScript(page.nonce),
      );
    case 'error':
      return documentOf(
        escapeHtml(page.title),
        `<main><h1>${escapeHtml(page.title)}</h1><p>${escapeHtml(page.message)}</p></main>`,
      );
  }
}

/** Headers of every share page: no caching, no referrer (the URL holds the token), no framing. */
export function sharePageHeaders(nonce?: string): Record<string, string> {
  const script = nonce ? `script-src 'nonce-${nonce}'` : "script-src 'none'";
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'content-security-policy': [
      "default-src 'none'",
      script,
      "style-src 'unsafe-inline'",
      "connect-src 'self'",
      'frame-src http: https:',
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  };
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Only http(s) URLs become links or frames: never `javascript:` or `data:`. */
export function safeUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
  } catch {
    // Not an absolute URL (an app that is not live has none): nothing to link to.
    return undefined;
  }
}

function appSection(view: ShareView, token: string): string {
  const url = safeUrl(view.url);
  const name = escapeHtml(view.name);
  const status = `<p>Status: <span id="status">${escapeHtml(view.status)}</span></p>`;
  if (!url) {
    return `<main><h1>${name}</h1>${status}<p>The app is not live yet; try again shortly.</p></main>`;
  }
  // A private app is not framed: its access cookie is set by a top-level visit to its host only.
  if (view.access === 'private') {
    const open = `/share/${encodeURIComponent(token)}/open`;
    return (
      `<main><h1>${name}</h1>${status}<p>This app is private; this link lets you in.</p>` +
      `<p><a id="app-link" href="${escapeHtml(open)}" rel="noreferrer">Open ${name}</a></p></main>`
    );
  }
  const href = escapeHtml(url);
  return (
    `<main><h1>${name}</h1>${status}` +
    `<p><a id="app-link" href="${href}" rel="noopener noreferrer" target="_blank">Open ${name}</a></p>` +
    `<iframe id="app-frame" src="${href}" title="${name}" ` +
    `sandbox="allow-scripts allow-same-origin allow-forms allow-popups" referrerpolicy="no-referrer"></iframe></main>`
  );
}

function passwordSection(name: string, token: string): string {
  return (
    `<main id="share" data-token="${escapeHtml(token)}"><h1>${escapeHtml(name)}</h1>` +
    '<p class="muted">This link is password-protected: enter the password you were given.</p>' +
    '<form id="unlock" class="panel"><label for="password">Password</label> ' +
    '<input id="password" name="password" type="password" autocomplete="current-password" required autofocus> ' +
    '<button type="submit" class="primary">Open</button></form><p id="message" role="alert"></p>' +
    '<noscript><p>This page needs JavaScript to send the password.</p></noscript></main>'
  );
}

/** Plain ES2017, no HTML strings: the server's answer lands in the page only as text and attributes. */
function unlockScript(nonce: string): string {
  return `<script nonce="${escapeHtml(nonce)}">
(function () {
  var main = document.getElementById('share');
  var form = document.getElementById('unlock');
  var message = document.getElementById('message');
  var api = new URL('../api/share/' + encodeURIComponent(main.dataset.token), location.href);
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function web(text) {
    var url = null;
    try { url = new URL(text); } catch (e) { url = null; }
    return url && (url.protocol === 'http:' || url.protocol === 'https:') ? url : null;
  }
  function show(view) {
    main.replaceChildren(el('h1', {}, view.name), el('p', {}, 'Status: ' + view.status));
    document.title = view.name;
    var url = web(view.url);
    if (!url) {
      main.appendChild(el('p', {}, 'The app is not live yet; try again shortly.'));
      return;
    }
    // A private app: this one-time address through its host lets the visitor in, in this tab.
    var grant = view.access === 'private' ? web(view.grant_url) : null;
    if (grant) {
      main.appendChild(el('p', {}, 'Opening the app…'));
      location.assign(grant.href);
      return;
    }
    var p = el('p', {});
    p.appendChild(el('a', { href: url.href, rel: 'noopener noreferrer', target: '_blank' }, 'Open ' + view.name));
    main.appendChild(p);
    main.appendChild(el('iframe', { src: url.href, title: view.name, referrerpolicy: 'no-referrer',
      sandbox: 'allow-scripts allow-same-origin allow-forms allow-popups' }));
  }
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    message.textContent = 'Checking…';
    fetch(api, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: document.getElementById('password').value }) })
      .then(function (res) {
        return res.json().then(function (body) { return { status: res.status, body: body }; });
      })
      .then(function (r) {
        if (r.status === 200) return show(r.body);
        if (r.status === 401) message.textContent = 'Wrong password.';
        else if (r.status === 404) message.textContent = 'This link has expired or was revoked.';
        else message.textContent = (r.body && r.body.message) || 'Could not open the link.';
      })
      .catch(function () { message.textContent = 'Could not reach the server.'; });
  });
})();
</script>`;
}

function documentOf(title: string, body: string, script = ''): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>${STYLE}</style></head>
<body><header><span class="brand">Slipway</span></header>${body}${script}</body></html>
`;
}

/** The dashboard's look (web/src/styles.css): its colours, light and dark, and its controls. */
const STYLE = `
:root { color-scheme: light; --bg: #ffffff; --panel: #f6f8fa; --text: #1b1f24; --muted: #57606a;
  --border: #c9d1d9; --link: #0550ae; --accent: #1d4ed8; --accent-text: #ffffff;
  --danger: #b42318; --focus: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; --bg: #0d1117; --panel: #161b22; --text: #e6edf3; --muted: #9da7b3;
    --border: #3d444d; --link: #79c0ff; --accent: #2f81f7; --accent-text: #0d1117;
    --danger: #ff7b72; --focus: #79c0ff; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; background: var(--bg); color: var(--text); }
a { color: var(--link); }
header { padding: 0.6rem 1.25rem; border-bottom: 1px solid var(--border); background: var(--panel); }
.brand { font-weight: 700; font-size: 1.1rem; }
main { max-width: 72rem; margin: 0 auto; padding: 1.25rem; overflow-wrap: anywhere; }
h1 { font-size: 1.6rem; margin: 0.5rem 0 1rem; }
.muted { color: var(--muted); }
.panel { display: flex; flex-wrap: wrap; align-items: end; gap: 0.5rem 0.75rem; max-width: 28rem;
  padding: 1rem; background: var(--panel); border: 1px solid var(--border); border-radius: 8px; }
label { display: flex; flex-direction: column; gap: 0.2rem; font-weight: 500; flex: 1 1 12rem; }
.panel label + input { flex: 1 1 12rem; }
input, button { font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--border);
  border-radius: 6px; padding: 0.35rem 0.65rem; }
button { cursor: pointer; }
.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-text); }
:focus-visible { outline: 2px solid var(--focus); outline-offset: 2px; }
iframe { width: 100%; height: 75vh; border: 1px solid var(--border); border-radius: 6px; }
#message { color: var(--danger); min-height: 1.5em; }
`;
