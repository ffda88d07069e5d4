import { useState } from 'preact/hooks';
import { ApiError, api, errorText } from '../lib/api';
import type { AppView, VersionView } from '../lib/types';
import { ConfirmButton } from './Confirm';
import { DeployWatch } from './DeployWatch';
import { EnvFields, type EnvRow } from './EnvFields';
import { Problem } from './Problem';

interface Props {
  app: AppView;
  versions: VersionView[];
  onDone: () => void;
}

/**
 * The same source again as a new version: a rollback to the version that serves (or the newest
 * one), or with new variables a config release of it (PATCH env); then watched like a deploy.
 */
export function AppRedeploy({ app, versions, onDone }: Props) {
  const [env, setEnv] = useState<EnvRow[]>([]);
  const [watch, setWatch] = useState<{ after: number; failure?: ApiError }>();
  const [problem, setProblem] = useState<string>();
  const source = app.live_version ?? versions[0]?.version;
  if (source === undefined) return null;

  const redeploy = async () => {
    setProblem(undefined);
    const after = versions[0]?.version ?? 0;
    const set = env.filter((row) => row.name.trim());
    setWatch({ after });
    try {
      if (set.length > 0) {
        await api(`/v1/apps/${app.app_id}`, { method: 'PATCH', json: { env: { set } } });
      } else {
        await api(`/v1/apps/${app.app_id}/rollback`, {
          method: 'POST',
          json: { version: source },
        });
      }
      setEnv([]);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'deploy_failed')
        setWatch({ after, failure: err });
      else {
        setWatch(undefined);
        setProblem(errorText(err));
      }
    }
    onDone();
  };

  return (
    <section aria-labelledby="redeploy-title">
      <h2 id="redeploy-title">Redeploy</h2>
      <p class="muted">
        The source and settings of version {source} again, as a new version; optionally with new or
        replaced variables.
      </p>
      <ConfirmButton
        label="Redeploy"
        question={`Redeploy ${app.name} from the source of version ${source}?`}
        confirm="Redeploy"
        onConfirm={() => void redeploy()}
      >
        <EnvFields
          rows={env}
          onChange={setEnv}
          legend="Variables (optional)"
          hint="None added: the version's own variables stay."
        />
      </ConfirmButton>
      <Problem text={problem} />
      {watch && <DeployWatch appId={app.app_id} after={watch.after} failure={watch.failure} />}
    </section>
  );
}
