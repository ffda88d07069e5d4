import type { V1ConfigMap } from '@kubernetes/client-node';
import type { MemoryState } from '../memory-state.js';
import { applyToMirror, keyOf, type ObjectKey } from './configmap-objects.js';
import type { Log } from '../../logging.js';
import type { ConfigMapWriter } from './configmap-writer.js';

/** What the API holds, brought into the mirror: from the first list, the watch and re-lists. */
export interface RemoteChanges {
  /** One ConfigMap of ours as it is now (`deleted`: it is gone). */
  event(cm: V1ConfigMap, deleted: boolean): void;
  /** A whole list: every object of ours the API holds; the known ones missing were deleted. */
  resync(items: V1ConfigMap[]): void;
}

/**
 * An object whose own change has not landed keeps the mirror's record (the writer puts it over
 * the API's, resolving the conflict); one the API holds at the resourceVersion we know (our own
 * write's echo) or older is skipped; anything else replaces the object's records in the mirror.
 * A ConfigMap that cannot be read is logged and left alone.
 */
export function remoteChanges(
  tables: () => MemoryState,
  writer: ConfigMapWriter,
  log: Log,
): RemoteChanges {
  const skip = (cm: V1ConfigMap | undefined, err: unknown): void =>
    log('warn', 'configmap store: ignoring a ConfigMap it cannot read', {
      configMap: cm?.metadata?.name,
      err: err instanceof Error ? err.message : String(err),
    });
  const keyOrSkip = (cm: V1ConfigMap): ObjectKey | undefined => {
    try {
      return keyOf(cm);
    } catch (err) {
      skip(cm, err);
      return undefined;
    }
  };
  const apply = (key: ObjectKey, cm: V1ConfigMap | undefined): void => {
    if (writer.pending(key)) return;
    const rv = cm?.metadata?.resourceVersion;
    const held = writer.resourceVersion(key);
    if (cm !== undefined ? !newer(rv, held) : held === undefined) return;
    try {
      applyToMirror(tables(), key, cm);
    } catch (err) {
      skip(cm, err);
      return;
    }
    writer.saw(key, cm === undefined ? undefined : rv);
  };
  return {
    event(cm, deleted) {
      const key = keyOrSkip(cm);
      if (key !== undefined) apply(key, deleted ? undefined : cm);
    },
    resync(items) {
      const present = new Set<ObjectKey>();
      for (const cm of items) {
        const key = keyOrSkip(cm);
        if (key === undefined) continue;
        present.add(key);
        apply(key, cm);
      }
      for (const key of writer.knownKeys()) if (!present.has(key)) apply(key, undefined);
    },
  };
}

/**
 * Whether `rv` is newer than the one we hold. The API calls resourceVersions opaque, but those
 * of one resource are etcd revisions: where both are integers, an event that trails our own
 * write (the watch can lag behind a write's answer) is recognised and does not undo it.
 */
function newer(rv: string | undefined, held: string | undefined): boolean {
  if (rv === held) return false;
  if (rv === undefined || held === undefined) return true;
  return !(INTEGER.test(rv) && INTEGER.test(held)) || BigInt(rv) > BigInt(held);
}

const INTEGER = /^\d{1,30}$/;
