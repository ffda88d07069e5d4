// The resolve hook of module-log.mjs; it runs on the module loader's own thread.
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let log;
const seen = new Set();

export function initialize(data) {
  log = data.log;
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (result.url.startsWith('file:') && result.url.includes('/node_modules/')) {
    const file = fileURLToPath(result.url);
    if (!seen.has(file)) {
      seen.add(file);
      appendFileSync(log, `${file}\n`);
    }
  }
  return result;
}
