/**
 * What the failed-deploy view leads with (web/src/lib/failure.ts): the first line that names the
 * error, and a tail that still holds it when a long stack follows; a stack said twice, once.
 */
import { describe, expect, it } from 'vitest';
import { failureTail, firstErrorLine, summaryOf } from '../../web/src/lib/failure.js';

const at = (n: number) => `2026-01-01T00:00:${String(n).padStart(2, '0')}.000Z `;
const stamped = (lines: string[]) => lines.map((line, i) => at(i) + line);

const NODE = [
  'node:internal/modules/cjs/loader:1228',
  '  throw err;',
  '  ^',
  '',
  "Error: Cannot find module './config.json'",
  'Require stack:',
  '- /app/server.js',
  ...Array.from({ length: 20 }, (_, i) => `    at frame${i} (node:internal/x:${i}:1)`),
  '',
  'Node.js v20.20.2',
];

describe('the failed deploy view', () => {
  it("leads with a node app's error line, and keeps it in the tail past a long stack", () => {
    const lines = stamped(NODE);
    expect(firstErrorLine(lines)).toBe("Error: Cannot find module './config.json'");
    const tail = failureTail(lines);
    expect(tail[0]).toContain("Error: Cannot find module './config.json'");
    expect(tail.at(-1)).toContain('Node.js v20.20.2');
  });

  it('shows a stack printed twice once', () => {
    const tail = failureTail(stamped([...NODE, ...NODE]));
    expect(tail.filter((l) => l.includes('Cannot find module'))).toHaveLength(1);
    expect(tail.filter((l) => l.includes('frame7 '))).toHaveLength(1);
  });

  it("names a Python app's exception, not the Traceback header", () => {
    const lines = [
      'Traceback (most recent call last):',
      '  File "/app/app.py", line 1, in <module>',
      '    import flask',
      "ModuleNotFoundError: No module named 'flask'",
    ];
    expect(firstErrorLine(lines)).toBe("ModuleNotFoundError: No module named 'flask'");
    expect(failureTail(lines)).toEqual(lines);
  });

  it("skips Slipway's own notes and keeps the summary of a message without its quoted lines", () => {
    const lines = [
      '[slipway] version 2 failed: AppExited: exited',
      'listening',
      'fatal: no config',
    ];
    expect(firstErrorLine(lines)).toBe('fatal: no config');
    expect(firstErrorLine(['listening on 3000'])).toBeUndefined();
    expect(summaryOf('version 2 exited with code 1; last lines:\nError: x\n  at y')).toBe(
      'version 2 exited with code 1',
    );
  });

  it('keeps the last 15 lines when no line names an error', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    expect(failureTail(lines)).toEqual(lines.slice(-15));
  });
});
