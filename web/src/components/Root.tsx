import { useEffect, useState } from 'preact/hooks';
import { api, errorText, onUnauthenticated } from '../lib/api';
import { currentToken, forgetToken, keepToken } from '../lib/session';
import type { AuthInfo, Whoami } from '../lib/types';
import { Shell } from './Shell';
import { SignIn } from '../pages/SignIn';

type State =
  | { kind: 'loading' }
  | { kind: 'signed-out'; auth: AuthInfo; error?: string }
  | { kind: 'signed-in'; auth: AuthInfo; me: Whoami };

/**
 * Which auth mode the server runs (`/api/auth`) decides the way in: a key to paste (apikey), a
 * provider's login (oidc), the proxy's session (oauth: no page of ours), or straight in (no auth).
 */
export function Root() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const [fatal, setFatal] = useState<string>();

  const enter = async (auth: AuthInfo): Promise<void> => {
    try {
      const me = await api<Whoami>('/api/whoami');
      // From here on a 401 means the key was revoked or the token expired: back to sign-in.
      onUnauthenticated(() => {
        forgetToken();
        setState({ kind: 'signed-out', auth, error: 'Your session ended; sign in again.' });
      });
      setState({ kind: 'signed-in', auth, me });
    } catch (err) {
      forgetToken();
      setState({ kind: 'signed-out', auth, error: errorText(err) });
    }
  };

  useEffect(() => {
    void (async () => {
      try {
        const auth = await api<AuthInfo>('/api/auth');
        if (auth.mode === 'oidc' && auth.oidc) {
          const oidc = await import('../lib/oidc');
          if (oidc.isCallback()) {
            const token = await oidc.finishSignIn(auth.oidc).catch((err: unknown) => {
              setState({ kind: 'signed-out', auth, error: `Sign-in failed: ${errorText(err)}` });
              return undefined;
            });
            if (!token) return;
            keepToken(token, false);
          }
        }
        const needsToken = auth.enabled && (auth.mode === 'apikey' || auth.mode === 'oidc');
        if (needsToken && !currentToken()) return setState({ kind: 'signed-out', auth });
        await enter(auth);
      } catch (err) {
        setFatal(errorText(err));
      }
    })();
  }, []);

  if (fatal) {
    return (
      <main class="center">
        <h1>Slipway</h1>
        <p role="alert">The server could not be reached: {fatal}</p>
      </main>
    );
  }
  if (state.kind === 'loading') {
    return (
      <main class="center" aria-busy="true">
        <p>Loading…</p>
      </main>
    );
  }
  if (state.kind === 'signed-out') {
    return <SignIn auth={state.auth} error={state.error} onSignedIn={() => enter(state.auth)} />;
  }
  const signOut = () => {
    onUnauthenticated(() => undefined);
    forgetToken();
    setState({ kind: 'signed-out', auth: state.auth });
  };
  return <Shell auth={state.auth} me={state.me} onSignOut={signOut} />;
}
