import { chmodSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The agent's source entry: bundled with its dependencies (tar-stream) into one file. */
const AGENT_ENTRY = fileURLToPath(new URL('../../agent/main.ts', import.meta.url));

/**
 * Bundles the agent once per runtime start into `outFile`, readable by the sandbox uid. Written
 * to a temp name and renamed, so a sandbox booting meanwhile never reads half a file.
 */
export async function bundleAgent(outFile: string): Promise<void> {
  const tmp = `${outFile}.${process.pid}.tmp`;
  await build({
    entryPoints: [AGENT_ENTRY],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    legalComments: 'none',
    // CommonJS dependencies call require() for node builtins; ESM output needs one in scope.
    banner: {
      js: "import { createRequire as __slipwayRequire } from 'node:module'; const require = __slipwayRequire(import.meta.url);",
    },
  });
  chmodSync(tmp, 0o644);
  renameSync(tmp, outFile);
}
