import type { Actor } from 'xstate';
import type { appMachine } from '../machines/app-machine.js';
import type { AppSnapshot } from './app-snapshot.js';

/**
 * Resolves with the actor's snapshot once `done` holds, the actor ends, `waitMs` passes or `cut`
 * is aborted; never rejects (a deploy that is still in flight at the deadline is an answer, not
 * an error).
 */
export function waitForSnapshot(
  actor: Actor<typeof appMachine>,
  done: (s: AppSnapshot) => boolean,
  waitMs: number,
  cut?: AbortSignal,
): Promise<AppSnapshot> {
  const now = actor.getSnapshot();
  if (now.status !== 'active' || waitMs <= 0 || cut?.aborted || done(now)) {
    return Promise.resolve(now);
  }
  return new Promise((resolve) => {
    const handles: { timer?: ReturnType<typeof setTimeout>; sub?: { unsubscribe(): void } } = {};
    let finished = false;
    const finish = (): void => {
      finished = true;
      clearTimeout(handles.timer);
      handles.sub?.unsubscribe();
      cut?.removeEventListener('abort', finish);
      resolve(actor.getSnapshot());
    };
    handles.timer = setTimeout(finish, waitMs);
    cut?.addEventListener('abort', finish, { once: true });
    handles.sub = actor.subscribe({
      next: (s) => void ((s.status !== 'active' || done(s)) && finish()),
      error: finish,
      complete: finish,
    });
    // A stopped actor completes its observer during subscribe, before `sub` was assigned.
    if (finished) handles.sub.unsubscribe();
  });
}
