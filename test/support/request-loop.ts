import { fetchApp } from './deploy.js';

export interface LoopResult {
  /** Every answer, in order: status and body (or the connection error). */
  answers: { status: number; body: string }[];
  /** Answers that were not a 200 whose body `ok` accepts. */
  failed: { status: number; body: string }[];
}

/**
 * A steady request loop on an app URL, one request after the other (a small pause between), until
 * `stop()`: what a user hammering refresh sees during a redeploy. A refused connection counts as a
 * failed request (status 0), never as an exception.
 */
export function requestLoop(url: string, ok: (body: string) => boolean, pauseMs = 10) {
  const answers: LoopResult['answers'] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      answers.push(await fetchApp(url).catch((err: unknown) => ({ status: 0, body: String(err) })));
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  })();
  return {
    /** Requests answered so far. */
    count: (): number => answers.length,
    async stop(): Promise<LoopResult> {
      running = false;
      await loop;
      const failed = answers.filter((a) => a.status !== 200 || !ok(a.body));
      return { answers, failed };
    },
  };
}
