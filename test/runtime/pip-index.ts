/**
 * A one-package PEP 503 "simple" index on the host's loopback, for the python general lane: this
 * machine has no Python package index, so the test brings its own, the way an operator's mirror
 * would sit on a private address. The wheel is built by the host's python3 (zipfile, no network).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PIP_PACKAGE = 'slipway-demo';
export const PIP_GREETING = 'installed by pip';
const WHEEL = 'slipway_demo-1.0-py3-none-any.whl';

const MAKE_WHEEL = `
import base64, hashlib, sys, zipfile
files = {
    'slipway_demo/__init__.py': "GREETING = '${PIP_GREETING}'\\n",
    'slipway_demo-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: slipway-demo\\nVersion: 1.0\\n',
    'slipway_demo-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: slipway-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n',
}
record = []
with zipfile.ZipFile(sys.argv[1], 'w') as whl:
    for name, text in files.items():
        data = text.encode()
        whl.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
        record.append('%s,sha256=%s,%d' % (name, digest, len(data)))
    record.append('slipway_demo-1.0.dist-info/RECORD,,')
    whl.writestr('slipway_demo-1.0.dist-info/RECORD', '\\n'.join(record) + '\\n')
`;

export interface PipIndex {
  /** `http://127.0.0.1:<port>/simple/` */
  url: string;
  /** Paths requested so far. */
  requests: string[];
  close(): Promise<void>;
}

export async function startPipIndex(python = '/usr/bin/python3'): Promise<PipIndex> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-pip-'));
  const path = join(dir, WHEEL);
  execFileSync(python, ['-c', MAKE_WHEEL, path]);
  const wheel = readFileSync(path);
  rmSync(dir, { recursive: true, force: true });
  const sha = createHash('sha256').update(wheel).digest('hex');
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === `/simple/${PIP_PACKAGE}/`) {
      res.setHeader('content-type', 'text/html');
      return res.end(
        `<html><body><a href="/files/${WHEEL}#sha256=${sha}">${WHEEL}</a></body></html>`,
      );
    }
    if (req.url === `/files/${WHEEL}`) return res.end(wheel);
    res.statusCode = 404;
    res.end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/simple/`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A python app answering `{value, path}`: `setup` runs first and sets `value`. */
export function pyReportApp(setup: string): string {
  return `
import json, os, http.server
${setup}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({'value': value, 'path': os.environ.get('PYTHONPATH', '')}).encode()
        self.send_response(200)
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()
`;
}
