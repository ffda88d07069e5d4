import type { Config } from '../config/schema.js';
import type { Lane, Runtime } from '../runtime/runtime.js';
import { DEFAULT_TARBALL_LIMITS } from '../sources/tarball.js';
import { APP_NAME, APP_NAME_MAX } from '../sources/app-name.js';
import { TEMPLATES } from '../sources/classify.js';
import type { Template } from '../sources/templates.js';

/** What this installation can run, for clients and agents that would otherwise guess. */
export interface PlatformInfo {
  backend: Runtime['backend'];
  templates: TemplateInfo[];
  runtimes: Record<string, string>;
  limits: {
    maxSourceBytes: number;
    maxUnpackedBytes: number;
    maxEntries: number;
    maxAppsPerOwner: number;
    maxSandboxMemoryMBPerOwner: number;
    maxAppsPerDepartment: number;
  };
  names: { pattern: string; maxLength: number };
  /** `urlPattern` is an app's URL with `{name}` in place of its name. */
  apps: { domain: string; urlPattern: string; defaultTtl: string };
}

export interface TemplateInfo {
  name: Template;
  available: boolean;
  reason?: string;
  lanes: { name: Lane; available: boolean; reason?: string }[];
}

const LANES: readonly Lane[] = ['fast', 'general'];

/** Templates with each lane's availability here (and why not), versions, limits and URLs. */
export function platformInfo(
  runtime: Runtime,
  config: Config,
  urls: { appsDomain: string; appUrl(name: string): string },
): PlatformInfo {
  const templates = TEMPLATES.map((name): TemplateInfo => {
    if (!runtime.templates.includes(name)) {
      const reason = `this ${runtime.backend} runtime has no ${name} template`;
      const lanes = LANES.map((lane) => ({ name: lane, available: false, reason }));
      return { name, available: false, reason, lanes };
    }
    const lanes = LANES.map((lane) => {
      const reason = runtime.laneUnavailable(name, lane);
      return reason === undefined
        ? { name: lane, available: true }
        : { name: lane, available: false, reason };
    });
    return { name, available: true, lanes };
  });
  const { maxSourceBytes, maxAppsPerOwner, maxSandboxMemoryMBPerOwner, maxAppsPerDepartment } =
    config.limits;
  return {
    backend: runtime.backend,
    templates,
    runtimes: runtime.versions(),
    limits: {
      maxSourceBytes,
      ...DEFAULT_TARBALL_LIMITS,
      maxAppsPerOwner,
      maxSandboxMemoryMBPerOwner,
      maxAppsPerDepartment,
    },
    names: { pattern: APP_NAME.source, maxLength: APP_NAME_MAX },
    apps: { domain: urls.appsDomain, urlPattern: urls.appUrl('{name}'), defaultTtl: '30m' },
  };
}
