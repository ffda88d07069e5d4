import { fileURLToPath } from 'node:url';
import { bundleEntry } from '../../bundle.js';

/**
 * The agent's source entries, bundled with their dependencies (tar-stream) into one file: the
 * bwrap sandbox's, and a Kubernetes pod's (the agent image runs that bundle).
 */
const ENTRIES = {
  sandbox: fileURLToPath(new URL('../../agent/main.ts', import.meta.url)),
  pod: fileURLToPath(new URL('../../agent/pod-main.ts', import.meta.url)),
};

/** Bundles the agent once per runtime start into `outFile`, readable by the sandbox uid. */
export function bundleAgent(
  outFile: string,
  entry: keyof typeof ENTRIES = 'sandbox',
): Promise<void> {
  return bundleEntry(ENTRIES[entry], outFile);
}
