import { ConfigError } from '../config/load.js';
import { apikeyMode } from './apikey.js';
import type { AuthMode, AuthModeContext, AuthModeFactory } from './auth-mode.js';
import { oauthProxyMode } from './oauth-proxy.js';
import { oidcMode } from './oidc.js';
import { isReservedPath } from './paths.js';

const registry = new Map<string, AuthModeFactory>(
  [apikeyMode, oidcMode, oauthProxyMode].map((factory) => [factory.name, factory]),
);

/** Adds a mode selectable by `auth.mode`; returns a function that removes it again. */
export function registerAuthMode(factory: AuthModeFactory): () => void {
  if (!/^[a-z][a-z0-9_-]{0,62}$/.test(factory.name) || factory.name === 'none') {
    throw new Error(`auth mode name "${factory.name}" must be a lower-case word and not "none"`);
  }
  if (registry.has(factory.name))
    throw new Error(`auth mode "${factory.name}" is already registered`);
  registry.set(factory.name, factory);
  return () => {
    if (registry.get(factory.name) === factory) registry.delete(factory.name);
  };
}

/** Names of every mode `auth.mode` may select, built-in and registered. */
export function registeredAuthModes(): string[] {
  return [...registry.keys()];
}

/** Creates the configured mode and validates what it declares; every problem is a ConfigError. */
export async function createAuthMode(context: AuthModeContext): Promise<AuthMode> {
  const name = context.config.auth.mode;
  const factory = registry.get(name);
  if (!factory) {
    throw new ConfigError(
      `config: auth.mode: unknown mode "${name}"; registered modes: ${registeredAuthModes().join(', ')}`,
    );
  }
  const mode = await factory.create(context);
  if (mode.name !== name) {
    throw new ConfigError(`config: auth.mode: mode "${name}" created a mode named "${mode.name}"`);
  }
  validateLoginRoutes(mode);
  return mode;
}

function validateLoginRoutes(mode: AuthMode): void {
  for (const route of mode.loginRoutes ?? []) {
    if (typeof route.url !== 'string' || !route.url.startsWith('/')) {
      throw new ConfigError(
        `config: auth.mode ${mode.name}: login route "${String(route.url)}" must start with /`,
      );
    }
    if (isReservedPath(route.url)) {
      throw new ConfigError(
        `config: auth.mode ${mode.name}: login route ${route.url} is under a protected prefix ` +
          '(/api, /v1, /mcp, /internal/sources); login routes must be public paths',
      );
    }
    if (typeof route.handler !== 'function') {
      throw new ConfigError(
        `config: auth.mode ${mode.name}: login route ${route.url} has no handler`,
      );
    }
  }
}
