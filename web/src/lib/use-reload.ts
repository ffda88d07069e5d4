import { useEffect, useState } from 'preact/hooks';
import { errorText } from './api';

/**
 * For a page that shows what the server has and changes it: `load` runs on mount and after each
 * change made with `run`. A failure of either becomes `problem`, cleared when the next change starts.
 */
export function useReload(load: () => Promise<void>) {
  const [problem, setProblem] = useState<string>();
  const reload = () => load().catch((err: unknown) => setProblem(errorText(err)));
  useEffect(() => void reload(), []);
  const run = async (work: () => Promise<unknown>) => {
    setProblem(undefined);
    try {
      await work();
    } catch (err) {
      setProblem(errorText(err));
      return;
    }
    await reload();
  };
  return { problem, run };
}
