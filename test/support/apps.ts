import { tarGz } from './tarball.js';

/**
 * A small node app for history and log tests. It answers `<label> <boot id>`: the boot id is new
 * in every process, so a test can tell a sandbox taken back warm from a fresh start of the same
 * source. `/log?msg=a&n=3` prints `a-1`..`a-3` (or `a` once without n) on stdout.
 */
export function nodeApp(label: string): Promise<Buffer> {
  return tarGz({
    'package.json': JSON.stringify({ name: 'history-app', main: 'server.js' }),
    'server.js': `
const http = require('node:http');
const boot = require('node:crypto').randomUUID();
console.log('booted ${label}');
http.createServer((req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/log') {
    const msg = url.searchParams.get('msg') ?? 'line';
    const n = Number(url.searchParams.get('n') ?? 0);
    if (n > 0) for (let i = 1; i <= n; i++) console.log(msg + '-' + i);
    else console.log(msg);
  }
  res.end('${label} ' + boot + '\\n');
}).listen(process.env.PORT);
`,
  });
}

/**
 * A node app that ignores SIGTERM: taking its sandbox down waits out the whole grace (teardown.ts),
 * so a test can act while its delete is under way.
 */
export function stubbornApp(): Promise<Buffer> {
  return tarGz({
    'package.json': JSON.stringify({ name: 'stubborn', main: 'server.js' }),
    'server.js': `
process.on('SIGTERM', () => console.log('not going'));
require('node:http').createServer((req, res) => res.end('here')).listen(process.env.PORT);
`,
  });
}
