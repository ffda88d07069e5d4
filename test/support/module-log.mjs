// `--import` this file (NODE_OPTIONS) to have a process write the path of every file it loads from
// node_modules, once each, to the file named by SLIPWAY_MODULE_LOG: ES modules through a resolve
// hook (which also sees CommonJS packages imported from ES modules), CommonJS through require.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const log = process.env.SLIPWAY_MODULE_LOG;
if (log === undefined) throw new Error('module-log.mjs needs SLIPWAY_MODULE_LOG');

register('./module-log-hooks.mjs', import.meta.url, { data: { log } });

const Module = createRequire(import.meta.url)('node:module');
const seen = new Set();
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const file = resolveFilename.apply(this, args);
  if (file.includes('/node_modules/') && !seen.has(file)) {
    seen.add(file);
    appendFileSync(log, `${file}\n`);
  }
  return file;
};
