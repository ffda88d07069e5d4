/**
 * The bearer token of this tab: an API key pasted in, or an OIDC access token. Kept in
 * sessionStorage (gone with the tab) unless the user asked to be remembered on this device.
 */
const KEY = 'slipway.token';

export function currentToken(): string | undefined {
  return sessionStorage.getItem(KEY) ?? localStorage.getItem(KEY) ?? undefined;
}

export function keepToken(token: string, remember: boolean): void {
  forgetToken();
  (remember ? localStorage : sessionStorage).setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}
