import type { CliError } from './errors.js';

/**
 * Where a command's words go. With `--json` stdout carries JSON only (one document, or one object
 * per line for streams) and progress is not drawn; otherwise results go to stdout and progress,
 * phases and errors to stderr, so `slipway ... > file` keeps just the result.
 */
/**
 * The texts of the log lines shown while this process ran (one process is one command): an
 * error's last lines leave them out, whichever Output prints the error.
 */
const shown = new Set<string>();

export class Output {
  constructor(readonly json: boolean) {}

  /** A log line (`<ISO time> <text>`) shown as it comes, while a deploy runs. */
  logLine(line: string): void {
    const text = textOf(line);
    shown.add(text);
    this.note(`  | ${text}`);
  }

  /** The command's result: `data` as JSON, or the human lines. */
  result(data: unknown, human: string | string[]): void {
    if (this.json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
    else process.stdout.write(`${[human].flat().join('\n')}\n`);
  }

  /** One record of a stream (logs): a JSON line, or the human line. */
  record(data: unknown, human: string): void {
    process.stdout.write(this.json ? `${JSON.stringify(data)}\n` : `${human}\n`);
  }

  /** Progress and notes for a person; nothing under --json. */
  note(line: string): void {
    if (!this.json) process.stderr.write(`${line}\n`);
  }

  /** Whether to draw things that redraw in place (the upload bar). */
  get interactive(): boolean {
    return !this.json && process.stderr.isTTY === true;
  }

  /**
   * A failed deploy's message ends with the app's last lines, and its details may carry them too:
   * they are given once, apart from the message, and not at all to a person who saw them streamed,
   * so a crash's stack is read once.
   */
  error(err: CliError): void {
    const [first = '', ...rest] = err.message.split('\n');
    const message = first.replace(/;? last lines:$/, '');
    const inDetails = logLines(err.details);
    if (this.json) {
      const error = { code: err.code, message, exit_code: err.exitCode, hint: err.hint };
      const extra = {
        ...(err.details !== undefined ? { details: err.details } : {}),
        ...(!inDetails && rest.length > 0 ? { logs: rest } : {}),
      };
      process.stdout.write(`${JSON.stringify({ error: { ...error, ...extra } }, null, 2)}\n`);
      return;
    }
    process.stderr.write(`slipway: ${err.code}: ${message}\n`);
    const logs = (inDetails ?? rest).filter((l) => !shown.has(textOf(l)));
    if (logs.length > 0)
      process.stderr.write(`last log lines:\n${logs.map((l) => `  ${l}`).join('\n')}\n`);
    process.stderr.write(`next: ${err.hint}\n`);
  }
}

/** A deploy_failed answer carries the version's last log lines in `details.logs`. */
function logLines(details: unknown): string[] | undefined {
  const logs = (details as { logs?: unknown } | undefined)?.logs;
  return Array.isArray(logs) ? logs.map(String) : undefined;
}

/** A log line without the time the server put before it. */
const textOf = (line: string): string => line.replace(/^\d{4}-\d\d-\d\dT[\d:.]+Z /, '');

/** Lays rows out in columns padded to the widest cell. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
