import { chmodSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The agent's source entries, bundled with their dependencies (tar-stream) into one file: the
 * bwrap sandbox's, and a Kubernetes pod's (the agent image runs that bundle).
 */
const ENTRIES = {
  sandbox: fileURLToPath(new URL('../../agent/main.ts', import.meta.url)),
  pod: fileURLToPath(new URL('../../agent/pod-main.ts', import.meta.url)),
};

/**
 * Bundles the agent once per runtime start into `outFile`, readable by the sandbox uid. Written
 * to a temp name and renamed, so a sandbox booting meanwhile never reads half a file.
 */
export async function bundleAgent(
  outFile: string,
  entry: keyof typeof ENTRIES = 'sandbox',
): Promise<void> {
  const tmp = `${outFile}.${process.pid}.tmp`;
  await build({
    entryPoints: [ENTRIES[entry]],
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
