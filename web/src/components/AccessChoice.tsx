import type { Access } from '../lib/types';
import { ACCESS_MEANS } from './AccessBadge';

const CHOICES: { value: Access | ''; label: string; means: string }[] = [
  {
    value: '',
    label: 'Server default',
    means:
      "Not sent: a new app gets the server's default (public unless the operator changed it), " +
      'a redeploy keeps the access the app has.',
  },
  { value: 'public', label: 'Public', means: ACCESS_MEANS.public },
  { value: 'private', label: 'Private', means: ACCESS_MEANS.private },
];

/** The deploy's `access`: left unset by default, so the server decides as the API says. */
export function AccessChoice({
  value,
  onChange,
}: {
  value: Access | '';
  onChange: (value: Access | '') => void;
}) {
  return (
    <fieldset class="access">
      <legend>Access</legend>
      {CHOICES.map((choice) => (
        <label class="check" key={choice.value}>
          <input
            type="radio"
            name="access"
            value={choice.value}
            checked={value === choice.value}
            onChange={() => onChange(choice.value)}
          />
          <span>
            {choice.label} <span class="muted">{choice.means}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}
