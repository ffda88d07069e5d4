import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { authHeaders, errorOf } from './api';

/**
 * Reads an SSE stream with fetch, because EventSource cannot send the bearer header. Resolves when
 * the server ends the stream or `signal` aborts it; a non-200 answer throws the API's error.
 * `onOpen` runs once the server has accepted the stream.
 */
export async function readSse(
  path: string,
  onEvent: (event: EventSourceMessage) => void,
  signal: AbortSignal,
  onOpen: () => void = () => undefined,
): Promise<void> {
  const res = await fetch(path, {
    headers: { ...authHeaders(), accept: 'text/event-stream' },
    credentials: 'same-origin',
    signal,
  });
  if (res.status !== 200 || !res.body) {
    const text = await res.text();
    throw errorOf(res.status, text ? JSON.parse(text) : undefined);
  }
  onOpen();
  const parser = createParser({ onEvent });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(value);
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
}
