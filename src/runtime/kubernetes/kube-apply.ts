import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { statusOf } from '../../cluster/request-options.js';
import type { Obj } from './kube-object.js';
import { EXT } from './sandbox-template.js';

/** The few writes the runtime makes, each idempotent. */
export class KubeApply {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;

  constructor(
    kc: KubeConfig,
    readonly namespace: string,
  ) {
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Creates the extension object, or replaces its spec when it exists. */
  async applyExt(plural: string, body: Obj): Promise<void> {
    const at = { ...EXT, namespace: this.namespace, plural };
    try {
      await this.custom.createNamespacedCustomObject({ ...at, body });
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      const current = (await this.custom.getNamespacedCustomObject({
        ...at,
        name: body.metadata.name,
      })) as Obj;
      await this.custom.replaceNamespacedCustomObject({
        ...at,
        name: body.metadata.name,
        body: {
          ...body,
          metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion },
        },
      });
    }
  }

  async createExt(plural: string, body: Record<string, unknown>): Promise<Obj> {
    return (await this.custom.createNamespacedCustomObject({
      ...EXT,
      namespace: this.namespace,
      plural,
      body,
    })) as Obj;
  }

  /** Deletes; one that is gone already is fine. Dependents go with it (background cascade). */
  async deleteExt(plural: string, name: string): Promise<void> {
    try {
      await this.custom.deleteNamespacedCustomObject({
        ...EXT,
        namespace: this.namespace,
        plural,
        name,
        propagationPolicy: 'Background',
      });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  async listExt<T>(plural: string, labelSelector: string): Promise<{ items: T[] }> {
    return (await this.custom.listNamespacedCustomObject({
      ...EXT,
      namespace: this.namespace,
      plural,
      labelSelector,
    })) as { items: T[] };
  }

  /** The Secret's entries `names`; a missing Secret or entry is an error that names it. */
  async readSecret(name: string, names: readonly string[]): Promise<Record<string, string>> {
    const secret = await this.core
      .readNamespacedSecret({ name, namespace: this.namespace })
      .catch((err: unknown) => {
        throw new Error(`the Secret ${name}: ${apiErrorText(err)}`);
      });
    const data = secret.data ?? {};
    const missing = names.filter((key) => !data[key]);
    if (missing.length > 0)
      throw new Error(`the Secret ${name} has no ${missing.join(', ')} entry`);
    return decoded(data, names);
  }

  /**
   * The Secret's entries, created with `fresh()` values for the names it lacks. Values are read
   * back, never logged.
   */
  async ensureSecret(
    name: string,
    names: readonly string[],
    fresh: () => string,
    labels: Record<string, string>,
  ): Promise<Record<string, string>> {
    const namespace = this.namespace;
    let existing: Record<string, string> | undefined;
    let resourceVersion: string | undefined;
    try {
      const secret = await this.core.readNamespacedSecret({ name, namespace });
      existing = secret.data ?? {};
      resourceVersion = secret.metadata?.resourceVersion;
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
    const data: Record<string, string> = { ...(existing ?? {}) };
    let changed = existing === undefined;
    for (const key of names) {
      if (data[key]) continue;
      data[key] = Buffer.from(fresh()).toString('base64');
      changed = true;
    }
    if (changed) {
      const body = {
        metadata: { name, labels, ...(resourceVersion ? { resourceVersion } : {}) },
        type: 'Opaque',
        data,
      };
      if (existing === undefined) await this.core.createNamespacedSecret({ namespace, body });
      else await this.core.replaceNamespacedSecret({ name, namespace, body });
    }
    return decoded(data, names);
  }
}

/** An API failure in a sentence, without the response body's noise. */
export function apiErrorText(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as { message?: unknown } | string | undefined;
    const message =
      typeof body === 'object' && body && typeof body.message === 'string' ? body.message : '';
    return `Kubernetes API answered ${err.code}${message ? `: ${message}` : ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** A Secret's `data` entries `names`, base64-decoded. */
function decoded(data: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    names.map((key) => [key, Buffer.from(data[key] ?? '', 'base64').toString('utf8')]),
  );
}
