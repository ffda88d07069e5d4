import type { Lane } from '../runtime.js';
import type { PackageHosts } from './package-hosts.js';

/**
 * Why the local runtime cannot run `lane` for `template`, as the LaneUnavailable message the user
 * reads before any sandbox exists; undefined when it can. The fast lane always runs; a static
 * site's general lane is its npm build.
 */
export function laneProblem(template: string, lane: Lane, hosts: PackageHosts): string | undefined {
  if (lane === 'fast') return undefined;
  if (template === 'static' && !hosts.npm) {
    return (
      `this site is built by npm run build in the sandbox, which this Slipway cannot offer: ` +
      `${hosts.missing.npm ?? 'no npm'}; build it yourself and deploy the output (dist/) ` +
      `without the build script`
    );
  }
  if (template === 'node' && !hosts.npm) {
    return (
      `this source needs the general lane (npm installs its dependencies or runs its build ` +
      `script in the sandbox), which this Slipway cannot offer: ${hosts.missing.npm ?? 'no npm'}; ` +
      `vendor the dependencies (run npm ci --omit=dev and deploy with node_modules/), drop the ` +
      `install and build scripts (deploy the build output), and deploy again`
    );
  }
  if (template === 'python' && !hosts.pip) {
    return (
      `this source needs the general lane (requirements.txt or pyproject.toml lists packages that ` +
      `are not vendored), which this Slipway cannot offer: ` +
      `${hosts.missing.pip ?? 'no Python package index'}; vendor the packages with ` +
      `pip install -r requirements.txt --target vendor and deploy again with vendor/ ` +
      `(Slipway puts it on PYTHONPATH)`
    );
  }
  return undefined;
}
