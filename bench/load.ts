import { Agent, request, type RequestOptions } from 'node:http';

/**
 * A closed-loop HTTP load generator: `connections` keep-alive clients each send the next request as
 * soon as the last answered, for `seconds`. Returns requests per second and the error count.
 */
export async function loadTest(
  target: RequestOptions,
  connections: number,
  seconds: number,
): Promise<{ rps: number; errors: number; requests: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const deadline = Date.now() + seconds * 1000;
  let requests = 0;
  let errors = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const ok = await once({ ...target, agent });
      if (ok) requests += 1;
      else errors += 1;
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: connections }, worker));
  const elapsed = (Date.now() - started) / 1000;
  agent.destroy();
  return { rps: requests / elapsed, errors, requests };
}

function once(options: RequestOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(options, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}
