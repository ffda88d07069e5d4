#!/usr/bin/env node
// There is no build step: tsx compiles the CLI's TypeScript as it loads.
import { register } from 'tsx/esm/api';

register();
const { main } = await import(new URL('../src/cli/main.ts', import.meta.url).href);
const code = await main(process.argv);
// Exit once stdout has taken everything written (it may be a pipe), even if a stream is still open.
process.stdout.write('', () => process.exit(code));
