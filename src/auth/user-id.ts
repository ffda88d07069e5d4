import { unauthenticated } from '../errors.js';

/**
 * Refuses user IDs an external identity (OIDC claim, proxy header) must not take: overlong or with
 * control characters, and the `apikey-` namespace, which would hand over an API-key user's apps.
 */
export function checkUserId(userId: string): void {
  if (userId.length > 255 || /[\x00-\x1f\x7f]/.test(userId))
    throw unauthenticated('unusable user id');
  if (userId.startsWith('apikey-'))
    throw unauthenticated('user ids starting with apikey- are reserved');
}
