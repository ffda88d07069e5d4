import type { SourceStore } from './source-store.js';

/** SourceStore.readWhole over its `size` and `open`, for a store with nothing quicker. */
export async function readWholeStreamed(
  store: Pick<SourceStore, 'size' | 'open'>,
  key: string,
  max: number,
): Promise<Buffer | undefined> {
  const size = await store.size(key);
  if (size === undefined || size > max) return undefined;
  const stream = await store.open(key);
  if (!stream) return undefined;
  const chunks: Buffer[] = [];
  let read = 0;
  for await (const chunk of stream) {
    read += (chunk as Buffer).length;
    // Replaced since the size was read (keys are never rewritten, but the store is not ours).
    if (read > max) {
      stream.destroy();
      return undefined;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
