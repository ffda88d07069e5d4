import { EventSourceParserStream } from 'eventsource-parser/stream';

export interface SseMessage {
  event?: string;
  id?: string;
  data: string;
}

/** The events of an SSE answer, in order, until the server ends it (comments are skipped). */
export async function* sseMessages(res: Response): AsyncGenerator<SseMessage> {
  if (!res.body) return;
  const reader = res.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
