/**
 * What a failed deploy's view leads with: the first line that names the error, then a tail of the
 * log that holds that line (a long stack after it would otherwise push it out of view).
 */

/** Log lines as the API sends them: `<ISO time> <text>`. */
const STAMP = /^\d{4}-\d\d-\d\dT[\d:.]+Z /;
/** `Error: …`, `TypeError: …`, `ModuleNotFoundError: …`: the line that says what went wrong. */
const NAMED = /^\s*(\w+\.)*\w*(Error|Exception)\b:/;
const LOOSE = /\b(error|exception|cannot find|not found|fatal|panic|failed)\b/i;
/** Slipway's own notes start so; the app's lines are what names its error. */
const NOTE = /^\[slipway\]/;
const TAIL = 15;
const MAX_TAIL = 40;

export const textOf = (line: string): string => line.replace(STAMP, '');

/** The first line that names the error (a named error first), or undefined. */
export function firstErrorLine(lines: readonly string[]): string | undefined {
  const texts = lines.map(textOf).filter((t) => !NOTE.test(t));
  return (texts.find((t) => NAMED.test(t)) ?? texts.find((t) => LOOSE.test(t)))?.trim();
}

/**
 * The last lines, reaching back to the error line when it came earlier; a line said again (a
 * stack printed twice, by the app and in its exit report) is shown once. Past MAX_TAIL, the
 * lines after the error's are elided.
 */
export function failureTail(lines: readonly string[]): string[] {
  const seen = new Set<string>();
  const once = lines.filter((line) => {
    const text = textOf(line).trim();
    if (text === '') return true;
    if (seen.has(text)) return false;
    seen.add(text);
    return true;
  });
  const first = firstErrorLine(once);
  const at = first === undefined ? -1 : once.findIndex((l) => textOf(l).trim() === first);
  const start = at < 0 ? Math.max(0, once.length - TAIL) : Math.min(at, once.length - TAIL);
  const tail = once.slice(Math.max(0, start));
  if (tail.length <= MAX_TAIL) return tail;
  const head = 10;
  return [
    ...tail.slice(0, head),
    `… ${tail.length - MAX_TAIL + 1} lines …`,
    ...tail.slice(-(MAX_TAIL - head - 1)),
  ];
}

/** The summary of an app's failure message: its first line, without the lines it quotes. */
export const summaryOf = (message: string): string =>
  (message.split('\n')[0] ?? '').replace(/; last lines:$/, '');

/** The lines a failure message quotes (after `; last lines:`), if any. */
export function quotedLines(message: string): string[] {
  const [, ...rest] = message.split('\n');
  return rest;
}
