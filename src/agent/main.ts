import { readSync } from 'node:fs';
import { createAgentCore } from './agent-core.js';
import { appHandler } from './app-servers.js';
import { listen, listenAppSocket, listenEgressForwarder } from './bridges.js';
import { createControlServer } from './control.js';
import { diag, errorText } from './diag.js';
import { tapProcessOutput } from './log-ring.js';
import { holdOptimizer } from './optimizer.js';
import { AGENT_SOCK, SOCKET_DIR, type BootMessage } from './protocol.js';
import { warmUp } from './warmup.js';

/**
 * The in-sandbox agent (design.md §4). Boots, listens on agent.sock and waits: that is the warm
 * sandbox. Everything it says about itself goes to the diagnostics fd; fds 1/2 belong to the app.
 */
async function main(): Promise<void> {
  const started = performance.now();
  holdOptimizer();
  const boot = readBoot();
  tapProcessOutput();

  const app = await listenAppSocket();
  const forwarder = await listenEgressForwarder();
  const servers = [app.server, forwarder];
  const { handlers } = await createAgentCore({
    template: boot.template,
    token: boot.token,
    ...(boot.python ? { python: boot.python } : {}),
    setAppHandler: app.setHandler,
    connectApp: appHandler,
    servers: () => servers,
    exit: (code) => process.exit(code),
  });
  const control = createControlServer(boot.token, handlers);
  servers.push(control);
  await listen(control, `${SOCKET_DIR}/${AGENT_SOCK}`);
  await warmUp(boot.template, boot.token);
  diag({ t: 'ready', ms: Math.round(performance.now() - started) });
}

/** The first line on stdin, read before anything else runs: the token never touches env or argv. */
function readBoot(): BootMessage {
  const buf = Buffer.alloc(4096);
  let text = '';
  while (!text.includes('\n')) {
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
      continue;
    }
    if (n === 0) break;
    text += buf.toString('utf8', 0, n);
  }
  const boot = JSON.parse(text.slice(0, text.indexOf('\n'))) as BootMessage;
  if (typeof boot.token !== 'string' || boot.token.length < 16) {
    throw new Error('boot message has no token');
  }
  return boot;
}

main().catch((err: unknown) => {
  diag({ t: 'log', level: 'error', msg: 'agent failed to boot', extra: { error: errorText(err) } });
  process.exit(70);
});
