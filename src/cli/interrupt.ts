import { CliError, EXIT } from './errors.js';

export interface Interruptible {
  /** From now on the server has the release: Ctrl-C stops the watching, not the release. */
  arm(): void;
  /** Runs `work`; once armed, Ctrl-C ends it with an error saying how to cancel instead. */
  watch<T>(work: () => Promise<T>): Promise<T>;
}

/**
 * Ctrl-C while a deploy or rollback is watched. Before `arm` (the source still on its way) it
 * stops the CLI as it always does; after, the server goes on with the release whatever the CLI
 * does, so the person is told so and how to cancel it, and the CLI exits 130.
 */
export function interruptible(app: string, what: 'deploy' | 'rollback'): Interruptible {
  let armed = false;
  let stop = (): void => undefined;
  const interrupted = new Promise<never>((_, reject) => {
    stop = () =>
      reject(
        new CliError(
          EXIT.interrupted,
          'interrupted',
          `stopped watching; the ${what} of ${app} goes on on the server`,
          `to cancel it: slipway cancel ${app}`,
        ),
      );
  });
  const onInterrupt = (): void => {
    if (armed) return stop();
    // Nothing reached the server yet: the signal does what it would have done without us.
    process.removeListener('SIGINT', onInterrupt);
    process.kill(process.pid, 'SIGINT');
  };
  return {
    arm() {
      armed = true;
    },
    async watch(work) {
      process.on('SIGINT', onInterrupt);
      try {
        return await Promise.race([work(), interrupted]);
      } finally {
        process.removeListener('SIGINT', onInterrupt);
      }
    },
  };
}
