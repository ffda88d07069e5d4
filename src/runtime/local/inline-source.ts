import { INLINE_SOURCE_MAX } from '../../agent/protocol.js';
import type { SourceStore } from '../../sources/source-store.js';

/**
 * The blob's bytes when it is at most INLINE_SOURCE_MAX long, to send with the inject itself;
 * undefined for a larger or missing one, which the agent pulls through the source door (and a
 * missing one fails there as it always did).
 */
export async function inlineSource(store: SourceStore, key: string): Promise<Buffer | undefined> {
  const size = await store.size(key);
  if (size === undefined || size > INLINE_SOURCE_MAX) return undefined;
  const stream = await store.open(key);
  if (!stream) return undefined;
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of stream) {
    read += (chunk as Buffer).length;
    // Replaced since the size was read (keys are never rewritten, but the store is not ours).
    if (read > INLINE_SOURCE_MAX) {
      stream.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
