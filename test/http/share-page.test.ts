import { describe, expect, it } from 'vitest';
import {
  escapeHtml,
  renderSharePage,
  safeUrl,
  sharePageHeaders,
} from '../../src/http/share-page.js';
import type { ShareView } from '../../src/services/share-view.js';

const EVIL = `<img src=x onerror="alert('x')">&`;

describe('the share page escapes everything it shows', () => {
  it('escapes the app name and status', () => {
    const html = renderSharePage({
      kind: 'open',
      view: {
        name: EVIL,
        // Not a phase the server sends, but the page escapes whatever it is given.
        status: '<b>Ready</b>' as ShareView['status'],
        url: 'http://demo.localhost:8080',
        access: 'public',
      },
      token: 'a'.repeat(64),
    });
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>');
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;');
    expect(html).toContain('href="http://demo.localhost:8080/"');
    expect(html).toContain('<iframe id="app-frame" src="http://demo.localhost:8080/"');
    expect(html).not.toContain('<script');
  });

  it('never links or frames a URL that is not http(s)', () => {
    for (const url of ['javascript:alert(1)', 'data:text/html,<script>1</script>', '', 'x']) {
      const view = { name: 'demo', status: 'Ready' as const, url, access: 'public' as const };
      const html = renderSharePage({ kind: 'open', view, token: 'a'.repeat(64) });
      expect(html, url).not.toContain('<iframe');
      expect(html, url).not.toContain('href=');
      expect(html, url).not.toContain('javascript:');
      expect(html, url).toContain('not live yet');
    }
    expect(safeUrl('https://a.example/"x"')).toBe('https://a.example/%22x%22');
  });

  it('links a private app through /share/{token}/open and never frames it', () => {
    const token = 'b'.repeat(64);
    const view = {
      name: 'demo',
      status: 'Ready' as const,
      url: 'http://demo.localhost:8080',
      access: 'private' as const,
    };
    const html = renderSharePage({ kind: 'open', view, token });
    expect(html).toContain(`href="/share/${token}/open"`);
    expect(html).toContain('This app is private');
    expect(html).not.toContain('<iframe');
    expect(html).not.toContain('href="http://demo.localhost:8080');
  });

  it('names the app on the protected page, escaped, with a nonce-bound script', () => {
    const html = renderSharePage({
      kind: 'protected',
      name: EVIL,
      token: 'ab"<cd',
      nonce: 'n0nce',
    });
    expect(html).toContain('data-token="ab&quot;&lt;cd"');
    expect(html).not.toContain('<img');
    expect(html).toContain('<h1>&lt;img src=x');
    expect(html).toContain('<form id="unlock" class="panel">');
    expect(html).toContain('type="password"');
    expect(html).toContain('<script nonce="n0nce">');
    expect(html).not.toContain('innerHTML');
    expect(sharePageHeaders('n0nce')['content-security-policy']).toContain(
      "script-src 'nonce-n0nce'",
    );
  });

  it('escapes error pages and forbids scripts on pages without a nonce', () => {
    const html = renderSharePage({ kind: 'error', title: EVIL, message: EVIL });
    expect(html).not.toContain('<img');
    const headers = sharePageHeaders();
    expect(headers['content-security-policy']).toContain("script-src 'none'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});
