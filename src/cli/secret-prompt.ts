import { CliError, EXIT } from './errors.js';

/**
 * Reads a line from the terminal without echoing it (a key, a password). Raw mode is the only way
 * node offers to keep typed characters off the screen; Ctrl-C still cancels.
 */
export function readSecret(prompt: string): Promise<string> {
  const { stdin, stderr } = process;
  stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      stderr.write('\n');
    };
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') {
          finish();
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(
            new CliError(
              EXIT.usage,
              'cancelled',
              'cancelled at the prompt',
              'run the command again',
            ),
          );
          return;
        }
        if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
        else value += char;
      }
    };
    stdin.on('data', onData);
  });
}
