/**
 * For a read that runs again on every event: only the answer of the newest call is used. Answers
 * can arrive out of order (each on its own connection, on a busy server), and an older one used
 * last would put a state the page has already moved past back on it, until the next event.
 * The failure of a call that a newer one replaced is dropped with its answer.
 */
export function newestOnly<T>(
  read: () => Promise<T>,
  use: (value: T) => void,
  fail: (err: unknown) => void,
): () => Promise<void> {
  let calls = 0;
  return async () => {
    const mine = ++calls;
    try {
      const value = await read();
      if (mine === calls) use(value);
    } catch (err) {
      if (mine === calls) fail(err);
    }
  };
}
