import { makeInformer, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { restartOnDrop, type InformerRestart } from '../../cluster/informer-restart.js';

export interface WatchedObject extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    [key: string]: unknown;
  };
}

/**
 * A watched collection of one kind in one namespace (list, then watch, re-listed whenever the
 * watch drops), with waits on its objects: the runtime never polls the API.
 */
export class ObjectWatch<T extends WatchedObject> {
  private readonly informer;
  private readonly waiters = new Set<() => void>();
  private stopped = false;
  private connected = false;
  private readonly restart: InformerRestart;

  constructor(
    kc: KubeConfig,
    path: string,
    list: () => Promise<{ items: T[] }>,
    labelSelector: string,
    onDrop: (err: unknown) => void,
  ) {
    this.informer = makeInformer<T>(kc, path, list as never, labelSelector);
    for (const verb of ['add', 'update', 'delete'] as const) {
      this.informer.on(verb, () => this.wake());
    }
    this.informer.on('connect', () => {
      this.connected = true;
      this.wake();
    });
    this.restart = restartOnDrop(this.informer, (err) => {
      this.connected = false;
      onDrop(err);
    });
  }

  async start(): Promise<void> {
    await this.informer.start();
    this.connected = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.restart.stop();
    await this.informer.stop();
    this.wake();
  }

  get healthy(): boolean {
    return this.connected && !this.stopped;
  }

  get(name: string, namespace: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  list(): readonly T[] {
    return this.informer.list();
  }

  /** Resolves with what `check` returns once it is defined; rejects after `timeoutMs`. */
  waitFor<R>(check: () => R | undefined, timeoutMs: number, what: string): Promise<R> {
    return new Promise((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(test);
        fn();
      };
      const test = () => {
        if (this.stopped) return done(() => reject(new Error(`stopped while waiting for ${what}`)));
        const found = check();
        if (found !== undefined) done(() => resolve(found));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${what}: not within ${timeoutMs} ms`))),
        timeoutMs,
      );
      this.waiters.add(test);
      test();
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

export function isTrue(obj: WatchedObject | undefined, type = 'Ready'): boolean {
  return (obj?.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}
