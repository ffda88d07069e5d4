import { chmodSync, renameSync } from 'node:fs';
import { build } from 'esbuild';

/**
 * Bundles a TypeScript entry with its dependencies into one ESM file that plain `node` runs (the
 * sandbox agent, the front door). Written to a temp name and renamed, so a process starting
 * meanwhile never reads half a file.
 */
export async function bundleEntry(entry: string, outFile: string): Promise<void> {
  const tmp = `${outFile}.${process.pid}.tmp`;
  await build({
    entryPoints: [entry],
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
