/**
 * The deploy's metadata (and the names `env set` and `env unset` take) checked here, before
 * anything is packed or sent, by the server's own rules
 * (the same functions the API runs), and refused in the CLI's words: the flag at fault, never an
 * API field path. Env values are secrets: no message shows one.
 */
import { AppError } from '../errors.js';
import { validateName } from '../services/deploy-metadata.js';
import {
  validateEgress,
  validateEnv,
  validateEnvName,
  validateTtl,
  type Refuse,
} from '../services/release-settings.js';
import { usageError } from './errors.js';

/** Where an env variable was given: `--env` or `--env-file <path>`. */
export type EnvOrigin = string;

export interface LocalMetadata {
  name: string;
  env: Map<string, { value: string; origin: EnvOrigin }>;
  egress: string[];
  ttl?: string;
}

export function checkMetadata(m: LocalMetadata): void {
  checkName(m.name);
  const env = [...m.env];
  guard(
    () =>
      validateEnv(
        env.map(([name, { value }]) => ({ name, value })),
        'env',
        refuser((field) => {
          const at = /^env\[(\d+)\]/.exec(field);
          const [name, item] = env[Number(at?.[1])] ?? [];
          return at && item ? `env variable "${name}" (from ${item.origin})` : 'the env';
        }),
      ),
    'fix the variable in --env or --env-file and deploy again',
  );
  if (m.egress.length > 0) {
    guard(
      () =>
        validateEgress(
          { allowed_hosts: m.egress },
          refuser((field) => {
            const at = /\[(\d+)\]$/.exec(field);
            return at ? `--egress ${m.egress[Number(at[1])]}` : '--egress';
          }),
        ),
      'fix --egress and deploy again',
    );
  }
  guard(
    () =>
      validateTtl(
        m.ttl,
        refuser(() => '--ttl'),
      ),
    'pass --ttl as a duration such as 30m or 2h',
  );
}

/** The names `env set` and `env unset` were given, by the server's rule for a variable's name. */
export function checkEnvNames(names: string[], command: string): void {
  for (const name of names) {
    guard(
      () =>
        validateEnvName(
          name,
          'name',
          refuser(() => `env variable "${name}"`),
        ),
      `fix the name and run slipway ${command} again`,
    );
  }
}

function checkName(name: string): void {
  try {
    validateName(name);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const problem = err.message.replace(/^metadata\.name /, '');
    throw usageError(`the app name "${name}" ${problem}`, 'pass --name with a name such as my-app');
  }
}

/**
 * A refusal that names what the person typed (`what(field)`), for the server's checks to throw:
 * the server's own code for them, though `guard` turns it into a usage error before anyone sees it.
 */
const refuser =
  (what: (field: string) => string): Refuse =>
  (field, problem) =>
    new AppError(400, 'bad_metadata', `${what(field)}: ${problem}`);

/** Runs a server check; its refusal becomes a usage error with `hint` as the next step. */
function guard(check: () => unknown, hint: string): void {
  try {
    check();
  } catch (err) {
    if (err instanceof AppError) throw usageError(err.message, hint);
    throw err;
  }
}
