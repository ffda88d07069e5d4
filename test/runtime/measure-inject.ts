/**
 * Inject latency on a warm pool against a bare `node server.js` start, measured in the same run
 * (design.md §8: on a noisy host only the ratio means anything). Not a test: run it by hand with
 * `npx tsx test/runtime/measure-inject.ts` (ROUNDS=20 by default).
 *
 * One round: a bare node start (spawn until it accepts a connection), then for each template a
 * claim + inject until the runtime says the app answers, on a pool refilled between rounds.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { claimOnly, inject, request, startRuntime } from './support.js';

const ROUNDS = Number(process.env.ROUNDS ?? 20);
const NODE_APP = `require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT);`;
const FILES: Record<string, Record<string, string>> = {
  node: { 'server.js': NODE_APP },
  static: { 'index.html': '<h1>ok</h1>' },
  python: {
    'main.py': `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`,
  },
};

const t = await startRuntime({ poolSize: 2 });
const bareScript = join(t.dataDir, 'bare-server.js');
writeFileSync(bareScript, NODE_APP);
const samples: Record<string, number[]> = {
  'bare node server.js': [],
  node: [],
  static: [],
  python: [],
};

for (let round = 0; round < ROUNDS; round += 1) {
  samples['bare node server.js']?.push(await bareStart());
  for (const template of ['node', 'static', 'python']) {
    await t.runtime.settled();
    const started = performance.now();
    const sandbox = await claimOnly(t, template);
    await inject(t, sandbox, template, FILES[template] ?? {});
    samples[template]?.push(performance.now() - started);
    if ((await request(sandbox, '/')).status !== 200) throw new Error(`${template} did not answer`);
    await t.runtime.reap(sandbox);
  }
}

const bare = median(samples['bare node server.js'] ?? []);
console.log(`claim+inject to answering, ${ROUNDS} rounds (ms), ratio = median / bare median`);
for (const [name, values] of Object.entries(samples)) {
  const m = median(values);
  const line = `${name.padEnd(20)} median ${m.toFixed(1).padStart(6)}  p90 ${percentile(values, 0.9).toFixed(1).padStart(6)}  min ${Math.min(
    ...values,
  )
    .toFixed(1)
    .padStart(6)}  ratio ${(m / bare).toFixed(2)}`;
  console.log(line);
}
await t.close();

/** Spawns `node server.js` (clean env) and times it until it accepts a connection. */
async function bareStart(): Promise<number> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const started = performance.now();
  const child = spawn(process.execPath, [bareScript], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port) },
    stdio: 'ignore',
  });
  while (!(await accepts(port))) await new Promise((resolve) => setTimeout(resolve, 1));
  const ms = performance.now() - started;
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  return ms;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function median(values: number[]): number {
  return percentile(values, 0.5);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}
