import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/** The warm-up tarball every source door serves (see WARMUP_KEY): a CommonJS and an ES module. */
export async function warmupTarball(): Promise<Buffer> {
  const pack = tar.pack();
  pack.entry(
    { name: 'warm/index.cjs', mode: 0o644 },
    "module.exports = require('node:http').STATUS_CODES[200];\n",
  );
  pack.entry(
    { name: 'warm/index.mjs', mode: 0o644 },
    "import http from 'node:http';\nexport default http.STATUS_CODES[200];\n",
  );
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}
