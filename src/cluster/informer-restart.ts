import type { Informer, KubernetesObject } from '@kubernetes/client-node';

/** After a watch drops, the informer is restarted (a fresh list, then watch) this much later. */
const RESYNC_DELAY_MS = 1_000;

export interface InformerRestart {
  /** Reports a failed start (or re-list) the same way as a dropped watch. */
  dropped(err: unknown): void;
  /** No more restarts; a pending one is cancelled. */
  stop(): void;
}

/**
 * Keeps an informer going: whenever its watch (or a re-list) fails, `onDrop` hears why and, once,
 * a second later, it lists and watches again, until stopped.
 */
export function restartOnDrop<T extends KubernetesObject>(
  informer: Informer<T>,
  onDrop: (err: unknown) => void,
): InformerRestart {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const dropped = (err: unknown): void => {
    onDrop(err);
    if (stopped || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      informer.start().catch(dropped);
    }, RESYNC_DELAY_MS);
  };
  informer.on('error', dropped);
  return {
    dropped,
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
