import { useState } from 'preact/hooks';
import { errorText } from '../lib/api';
import { keepToken } from '../lib/session';
import type { AuthInfo } from '../lib/types';
import { Problem } from '../components/Problem';

interface Props {
  auth: AuthInfo;
  error?: string;
  onSignedIn: () => void;
}

export function SignIn({ auth, error, onSignedIn }: Props) {
  const [key, setKey] = useState('');
  const [remember, setRemember] = useState(false);
  const [problem, setProblem] = useState<string>();
  const message = problem ?? error;

  const submitKey = (event: Event) => {
    event.preventDefault();
    keepToken(key.trim(), remember);
    onSignedIn();
  };

  const oidcSignIn = async () => {
    if (!auth.oidc) return;
    try {
      const { startSignIn } = await import('../lib/oidc');
      await startSignIn(auth.oidc);
    } catch (err) {
      setProblem(`Could not reach the identity provider: ${errorText(err)}`);
    }
  };

  return (
    <main class="center signin">
      <h1>Sign in to Slipway</h1>
      <Problem text={message} />
      {auth.mode === 'apikey' && (
        <form onSubmit={submitKey} class="stack">
          <label for="api-key">API key</label>
          <input
            id="api-key"
            type="password"
            autocomplete="off"
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
          <label class="check">
            <input
              type="checkbox"
              checked={remember}
              onChange={(e) => setRemember(e.currentTarget.checked)}
            />
            Remember on this device
          </label>
          <button type="submit" class="primary">
            Sign in
          </button>
          <p class="muted">The key stays in this tab unless you ask to be remembered.</p>
        </form>
      )}
      {auth.mode === 'oidc' && auth.oidc && (
        <button type="button" class="primary" onClick={oidcSignIn}>
          Sign in with {new URL(auth.oidc.issuer).host}
        </button>
      )}
      {auth.mode === 'oidc' && !auth.oidc && (
        <p>
          This server signs in with OIDC but names no dashboard client (
          <code>auth.oidc.dashboardClientId</code>); use the API or the CLI with a token.
        </p>
      )}
      {auth.mode !== 'apikey' && auth.mode !== 'oidc' && auth.loginUrl && (
        <p>
          <a class="button primary" href={auth.loginUrl}>
            Sign in
          </a>
        </p>
      )}
      {auth.mode !== 'apikey' && auth.mode !== 'oidc' && !auth.loginUrl && (
        <p>
          This server trusts its proxy to sign you in (mode <code>{auth.mode}</code>); reload the
          page through it.
        </p>
      )}
    </main>
  );
}
