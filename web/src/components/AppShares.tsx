import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../lib/api';
import { exact } from '../lib/format';
import type { Access, ShareLink } from '../lib/types';
import { CopyButton } from './CopyButton';
import { Problem } from './Problem';
import { TextField } from './TextField';

// What a link does for an app of each access (the MCP tool create_share_link says the same).
const PROTECTS: Record<Access, string> = {
  private:
    'This app is private: its URL answers 401 without a grant, and a share link (after its ' +
    'password, if any) is how visitors get in, until the link expires or is revoked.',
  public:
    'This app is public: anyone with its URL can open it, so a link only points at it and its ' +
    'password protects only the link page. Make the app private to protect the app itself.',
};

/** Public share links of the app: create (optional password and expiry), copy, revoke. */
export function AppShares({ id, access }: { id: string; access: Access }) {
  const [links, setLinks] = useState<ShareLink[]>([]);
  const [password, setPassword] = useState('');
  const [expires, setExpires] = useState('');
  const [problem, setProblem] = useState<string>();
  const [unavailable, setUnavailable] = useState<string>();

  const load = () =>
    api<{ items: ShareLink[] }>(`/v1/apps/${id}/share-links`)
      .then((page) => setLinks(page.items))
      .catch((err: unknown) => setUnavailable(errorText(err)));
  useEffect(() => void load(), [id]);

  const create = async (event: Event) => {
    event.preventDefault();
    setProblem(undefined);
    try {
      const body = {
        ...(password ? { password } : {}),
        ...(expires ? { expires_in: expires } : {}),
      };
      await api(`/v1/apps/${id}/share-links`, { method: 'POST', json: body });
      setPassword('');
      setExpires('');
      await load();
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  const revoke = async (token: string) => {
    try {
      await api(`/api/share-links/${token}`, { method: 'DELETE' });
      await load();
    } catch (err) {
      setProblem(errorText(err));
    }
  };

  return (
    <section aria-labelledby="shares-title">
      <h2 id="shares-title">Share links</h2>
      <p data-testid="shares-protect">{PROTECTS[access]}</p>
      {unavailable ? (
        <p class="muted">Share links are unavailable here: {unavailable}</p>
      ) : (
        <>
          <form class="row" onSubmit={create}>
            <TextField
              label="Password (optional)"
              type="password"
              autocomplete="new-password"
              value={password}
              onValue={setPassword}
            />
            <TextField
              label="Expires in (optional)"
              placeholder="24h"
              pattern="([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+"
              value={expires}
              onValue={setExpires}
            />
            <button type="submit">Create link</button>
          </form>
          <Problem text={problem} />
          {links.length === 0 ? (
            <p class="muted">No share links.</p>
          ) : (
            <ul class="links">
              {links.map((link) => (
                <li key={link.token} data-token={link.token}>
                  <a href={link.url} target="_blank" rel="noopener noreferrer">
                    {link.url}
                  </a>{' '}
                  <span class="muted">
                    {link.has_password ? 'password' : 'open'} ·{' '}
                    {link.expires_at ? `expires ${exact(link.expires_at)}` : 'no expiry'}
                  </span>{' '}
                  <CopyButton text={link.url} label="Copy link" />
                  <button type="button" class="danger" onClick={() => revoke(link.token)}>
                    Revoke
                  </button>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
