import type { AppView, Access } from '../lib/types';
import { ACCESS_MEANS, AccessBadge } from './AccessBadge';
import { ConfirmButton } from './Confirm';

interface Props {
  app: AppView;
  onChange: (access: Access) => void;
}

/**
 * The app's access as a row of the facts list, with the switch: making an app private only
 * narrows who gets in, so it goes at once; making it public opens it to anyone, so it asks first.
 */
export function AppAccess({ app, onChange }: Props) {
  return (
    <>
      <dt>Access</dt>
      <dd data-testid="access">
        <AccessBadge access={app.access} /> <span class="muted">{ACCESS_MEANS[app.access]}</span>{' '}
        {app.access === 'private' ? (
          <ConfirmButton
            label="Make public"
            question={`Make ${app.name} public? Anyone with its URL can open it, without a token or a share link.`}
            confirm="Make public"
            danger
            onConfirm={() => onChange('public')}
          />
        ) : (
          <button type="button" onClick={() => onChange('private')}>
            Make private
          </button>
        )}
      </dd>
    </>
  );
}
