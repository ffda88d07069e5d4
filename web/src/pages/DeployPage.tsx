import { useState } from 'preact/hooks';
import { ApiError, api, errorText } from '../lib/api';
import { appNameOf, type LeftOut } from '../lib/folder';
import { packTarGz } from '../lib/tar';
import { count } from '../lib/format';
import { uploadDeploy } from '../lib/upload';
import { DropZone, type Chosen } from '../components/DropZone';
import { EnvFields, type EnvRow } from '../components/EnvFields';
import { AccessChoice } from '../components/AccessChoice';
import type { Access, AppView } from '../lib/types';
import { DeployWatch } from '../components/DeployWatch';
import { Problem } from '../components/Problem';

// The `pattern` attribute compiles with the v flag, where a literal `-` in a class needs escaping.
const NAME = '[a-z0-9]([a-z0-9\\-]*[a-z0-9])?';

type Step =
  | { kind: 'form' }
  | { kind: 'packing' }
  | { kind: 'uploading'; fraction: number }
  | { kind: 'watching'; appId: string; after: number; waiting: boolean; failure?: ApiError };

export function DeployPage() {
  const [chosen, setChosen] = useState<Chosen>();
  const [name, setName] = useState('');
  const [env, setEnv] = useState<EnvRow[]>([]);
  const [access, setAccess] = useState<Access | ''>('');
  const [step, setStep] = useState<Step>({ kind: 'form' });
  const [problem, setProblem] = useState<string>();

  const choose = (next: Chosen) => {
    setChosen(next);
    setProblem(undefined);
    if (!name) setName(appNameOf(next.name.replace(/\.(tar\.gz|tgz)$/i, '')));
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!chosen) return setProblem('Choose a folder or a .tar.gz first.');
    setProblem(undefined);
    let after = 0;
    try {
      setStep({ kind: 'packing' });
      // The size limit is the server's (limits.maxSourceBytes): its 413 says it.
      const source = chosen.kind === 'archive' ? chosen.file : await packTarGz(chosen.files);
      const metadata = {
        name,
        ...(env.length ? { env: env.filter((r) => r.name.trim()) } : {}),
        ...(access ? { access } : {}),
      };
      after = await newestVersion(name);
      setStep({ kind: 'uploading', fraction: 0 });
      // Watched from the moment the bytes are sent: the server answers only once the app is
      // live or after its wait, and the install and build lines come meanwhile.
      const watching = { kind: 'watching', appId: name, after } as const;
      const answer = await uploadDeploy(metadata, source, (fraction) =>
        setStep(fraction < 1 ? { kind: 'uploading', fraction } : { ...watching, waiting: true }),
      );
      setStep({ ...watching, appId: answer.app_id, waiting: false });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'deploy_failed') {
        return setStep({ kind: 'watching', appId: name, after, waiting: false, failure: err });
      }
      setStep({ kind: 'form' });
      setProblem(errorText(err));
    }
  };

  if (step.kind === 'watching') {
    return (
      <>
        <h1>Deploying {step.appId}</h1>
        <DeployWatch
          appId={step.appId}
          after={step.after}
          waiting={step.waiting}
          failure={step.failure}
        />
        <p>
          <button type="button" onClick={() => setStep({ kind: 'form' })}>
            Deploy again
          </button>
        </p>
      </>
    );
  }

  const busy = step.kind !== 'form';
  return (
    <>
      <h1>Deploy an app</h1>
      <form class="stack deploy" onSubmit={submit}>
        <DropZone onChosen={choose} />
        {chosen && (
          <p class="chosen" data-testid="chosen">
            {chosen.kind === 'folder'
              ? `Folder ${chosen.name}: ${count(chosen.files.length, 'file')}, packed in the browser`
              : `Archive ${chosen.name} (${mb(chosen.file.size)})`}
          </p>
        )}
        {chosen?.kind === 'folder' && chosen.leftOut.length > 0 && (
          <LeftOutList leftOut={chosen.leftOut} />
        )}
        <label for="app-name">App name</label>
        <input
          id="app-name"
          required
          maxLength={63}
          pattern={NAME}
          value={name}
          aria-describedby="app-name-help"
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <p id="app-name-help" class="muted">
          Lower-case letters, digits and dashes; it becomes the app's subdomain.
        </p>
        <EnvFields
          rows={env}
          onChange={setEnv}
          hint="None added: a redeploy keeps the app's variables (its page changes them without a deploy)."
        />
        <AccessChoice value={access} onChange={setAccess} />
        {step.kind === 'uploading' && (
          <label>
            Uploading
            <progress max={1} value={step.fraction}>
              {Math.round(step.fraction * 100)}%
            </progress>
          </label>
        )}
        {step.kind === 'packing' && <p aria-live="polite">Packing the folder…</p>}
        <Problem text={problem} />
        <button type="submit" class="primary" disabled={busy}>
          Deploy
        </button>
      </form>
    </>
  );
}

/** What the folder holds but the upload leaves out, by the same rules as the CLI. */
function LeftOutList({ leftOut }: { leftOut: LeftOut[] }) {
  return (
    <details class="left-out" data-testid="left-out" open={leftOut.length <= 5}>
      <summary>
        Left out, as the CLI would: {count(leftOut.length, 'item')} (.git, node_modules, and what
        .gitignore and .slipwayignore name)
      </summary>
      <ul>
        {leftOut.map((item) => (
          <li key={item.path}>
            <code>{item.folder ? `${item.path}/` : item.path}</code>
            {item.folder && item.files !== undefined && ` (${count(item.files, 'file')})`}
          </li>
        ))}
      </ul>
    </details>
  );
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * The app's newest version now, 0 when it has none (or is not the caller's: the deploy says so).
 * Read from the list, which has no 404 for an app that does not exist yet.
 */
async function newestVersion(name: string): Promise<number> {
  const apps = await api<{ items: AppView[] }>('/v1/apps');
  return apps.items.find((app) => app.app_id === name)?.last_deploy?.version ?? 0;
}
