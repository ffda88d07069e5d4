import * as oauth from 'oauth4webapi';
import type { AuthInfo } from './types';

/**
 * OIDC sign-in in the browser: Authorization Code with PKCE against the configured issuer, as a
 * public client. The verifier and state wait in sessionStorage for the redirect back to `/`; the
 * access token comes from the token endpoint in a POST body, never through a URL.
 */
type Settings = NonNullable<AuthInfo['oidc']>;

const PENDING = 'slipway.oidc';

interface Pending {
  verifier: string;
  state: string;
  hash: string;
}

/** Sends the browser to the provider's login. */
export async function startSignIn(settings: Settings): Promise<void> {
  const as = await discover(settings);
  if (!as.authorization_endpoint) throw new Error('the provider has no authorization endpoint');
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const pending: Pending = { verifier, state, hash: location.hash };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(as.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: settings.client_id,
    redirect_uri: redirectUri(),
    response_type: 'code',
    scope: settings.scopes.join(' '),
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...(settings.audience ? { resource: settings.audience } : {}),
  }).toString();
  location.assign(url.href);
}

/** True when this load is the provider's redirect back to the dashboard. */
export function isCallback(): boolean {
  const params = new URLSearchParams(location.search);
  return sessionStorage.getItem(PENDING) !== null && (params.has('code') || params.has('error'));
}

/** Finishes the redirect: checks state, redeems the code with the verifier, cleans the URL. */
export async function finishSignIn(settings: Settings): Promise<string> {
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null') as Pending | null;
  sessionStorage.removeItem(PENDING);
  const current = new URL(location.href);
  history.replaceState(null, '', `/${pending?.hash ?? ''}`);
  if (!pending) throw new Error('no sign-in was in progress in this tab');
  const as = await discover(settings);
  const client: oauth.Client = { client_id: settings.client_id };
  const params = oauth.validateAuthResponse(as, client, current, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    redirectUri(),
    pending.verifier,
    {
      ...insecure(settings),
      ...(settings.audience ? { additionalParameters: { resource: settings.audience } } : {}),
    },
  );
  const result = await oauth.processAuthorizationCodeResponse(as, client, response);
  return result.access_token;
}

async function discover(settings: Settings): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(settings.issuer);
  const response = await oauth.discoveryRequest(issuer, insecure(settings));
  return oauth.processDiscoveryResponse(issuer, response);
}

const redirectUri = (): string => `${location.origin}/`;

/** An http:// issuer is the operator's choice (a lab, a test); oauth4webapi wants it said. */
const insecure = (settings: Settings) =>
  settings.issuer.startsWith('http:') ? { [oauth.allowInsecureRequests]: true } : {};
