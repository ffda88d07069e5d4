import { Watch, type CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { SELECTOR } from './configmap-objects.js';
import type { Log } from '../../logging.js';
import { timeoutOptions } from '../../cluster/request-options.js';
import { unavailable } from './kube-fault.js';

/** Every ConfigMap of ours in the namespace, page by page, and the list's resourceVersion. */
export async function listOurs(
  api: CoreV1Api,
  namespace: string,
  timeoutMs = 15_000,
): Promise<{ items: V1ConfigMap[]; resourceVersion: string }> {
  const items: V1ConfigMap[] = [];
  let next: string | undefined;
  for (;;) {
    const page = await api.listNamespacedConfigMap(
      {
        namespace,
        labelSelector: SELECTOR,
        limit: 500,
        ...(next === undefined ? {} : { _continue: next }),
      },
      timeoutOptions(timeoutMs),
    );
    items.push(...page.items);
    next = page.metadata?._continue;
    if (!next) return { items, resourceVersion: page.metadata?.resourceVersion ?? '' };
  }
}

export interface ConfigMapWatchOptions {
  kubeConfig: KubeConfig;
  api: CoreV1Api;
  namespace: string;
  log: Log;
  /** A ConfigMap of ours changed (`deleted`: it is gone). */
  onEvent(cm: V1ConfigMap, deleted: boolean): void;
  /** A fresh list after the watch dropped: what the API holds now, whole. */
  onResync(items: V1ConfigMap[]): void;
}

/**
 * Follows our ConfigMaps from a list's resourceVersion, so changes another replica (or a person)
 * makes reach the mirror. The server ends a watch every few minutes: it is resumed from the last
 * resourceVersion seen. When it fails or the version has expired (410 Gone), the store re-lists
 * (with backoff) and compares resourceVersions before watching again.
 */
export class ConfigMapWatch {
  private controller: AbortController | undefined;
  private resourceVersion = '';
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: ConfigMapWatchOptions) {}

  start(resourceVersion: string): void {
    this.resourceVersion = resourceVersion;
    void this.watch();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller?.abort();
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    let expired = false;
    const startedAt = Date.now();
    const path = `/api/v1/namespaces/${this.opts.namespace}/configmaps`;
    const query = {
      labelSelector: SELECTOR,
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: WATCH_SECONDS,
    };
    const controller = await new Watch(this.opts.kubeConfig).watch(
      path,
      query,
      (type: string, object: V1ConfigMap & { code?: number }) => {
        if (type === 'ERROR') {
          expired = object.code === 410;
          return;
        }
        const rv = object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
          this.opts.onEvent(object, type === 'DELETED');
        }
      },
      (err: unknown) => this.ended(err, expired || Date.now() - startedAt < 1_000),
    );
    if (this.stopped) controller.abort();
    else this.controller = controller;
  }

  /** `suspect`: the version expired, or the watch ended at once (a dropped connection). */
  private ended(err: unknown, suspect: boolean): void {
    if (this.stopped) return;
    // A clean end after a while (the server's timeout) resumes where it was; else re-list.
    if (!err && !suspect) {
      void this.watch();
      return;
    }
    if (err) {
      this.opts.log('warn', 'configmap store: watch dropped; re-listing', {
        reason: unavailable(err).reason,
      });
    }
    this.resync(Math.min(100 * 2 ** this.failures, 5_000));
  }

  private resync(delayMs: number): void {
    this.timer = setTimeout(() => {
      listOurs(this.opts.api, this.opts.namespace).then(
        ({ items, resourceVersion }) => {
          if (this.stopped) return;
          this.failures = 0;
          this.opts.onResync(items);
          this.start(resourceVersion);
        },
        (err: unknown) => {
          if (this.stopped) return;
          this.failures += 1;
          if (this.failures === 1 || this.failures % 10 === 0) {
            this.opts.log('warn', 'configmap store: re-list failed; retrying', {
              reason: unavailable(err).reason,
              failures: this.failures,
            });
          }
          this.resync(Math.min(100 * 2 ** this.failures, 5_000));
        },
      );
    }, delayMs);
    this.timer.unref();
  }
}

/** How long the server keeps one watch open before ending it (then it is resumed). */
const WATCH_SECONDS = 240;
