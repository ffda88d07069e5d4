#!/usr/bin/env node
// There is no build step: tsx compiles the CLI's TypeScript as it loads, with this package's
// tsconfig (not one tsx would find in the directory the command runs from).
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
const { main } = await import(new URL('../src/cli/main.ts', import.meta.url).href);
const code = await main(process.argv);
// Exit once stdout has taken everything written (it may be a pipe), even if a stream is still open.
process.stdout.write('', () => process.exit(code));
