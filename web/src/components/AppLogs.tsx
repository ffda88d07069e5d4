import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from '../lib/api';
import { readSse } from '../lib/sse';
import type { VersionView } from '../lib/types';
import { Problem } from './Problem';

const MAX_LINES = 2_000;

interface Line {
  version: string;
  text: string;
}

/**
 * The log tail over SSE: following keeps the stream open; pausing closes it (following again
 * reloads the last lines, so nothing printed meanwhile is lost from view). A version filter asks
 * the server for that version's lines only; clear empties the view.
 */
export function AppLogs({ id, versions }: { id: string; versions: VersionView[] }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [follow, setFollow] = useState(true);
  const [version, setVersion] = useState('');
  const [problem, setProblem] = useState<string>();
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    if (!follow) return;
    const abort = new AbortController();
    setLines([]);
    setProblem(undefined);
    const query = new URLSearchParams({ follow: 'true', ...(version ? { version } : {}) });
    readSse(
      `/v1/apps/${id}/logs?${query}`,
      (m) => {
        if (m.event === 'error') return setProblem(m.data);
        setLines((all) => [...all, { version: m.id ?? '', text: m.data }].slice(-MAX_LINES));
      },
      abort.signal,
    ).catch((err: unknown) => setProblem(errorText(err)));
    return () => abort.abort();
  }, [id, follow, version]);

  useEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);

  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">Logs</h2>
      <div class="row">
        <button type="button" onClick={() => setFollow(!follow)}>
          {follow ? 'Pause' : 'Follow'}
        </button>
        <label>
          Version
          <select value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            <option value="">All</option>
            {versions.map((v) => (
              <option key={v.version} value={String(v.version)}>
                v{v.version}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setLines([])}>
          Clear
        </button>
        <span class="muted">{follow ? 'following' : 'paused'}</span>
      </div>
      <Problem text={problem} />
      <pre class="log" ref={box} tabIndex={0} aria-label="Log lines" data-testid="log">
        {lines.length === 0
          ? 'No lines yet.'
          : lines.map((l, i) => (
              <span key={i} class="line">
                {l.text}
                {'\n'}
              </span>
            ))}
      </pre>
    </section>
  );
}
