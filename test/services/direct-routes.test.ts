import { describe, expect, it } from 'vitest';
import type { AppRegistry } from '../../src/actors/registry.js';
import { DirectRoutes, type RoutePublisher } from '../../src/services/direct-routes.js';
import { PublicUrls } from '../../src/services/public-urls.js';
import type { Sandbox } from '../../src/runtime/runtime.js';

/** A publisher whose writes wait until the test lets them through. */
function heldPublisher() {
  const writes: { appId: string; target: string; done: () => void }[] = [];
  const withdrawn: string[] = [];
  const publisher: RoutePublisher = {
    publish: (e) =>
      new Promise<void>((done) =>
        writes.push({ appId: e.appId, target: JSON.stringify(e.target), done }),
      ),
    withdraw: async (appId) => void withdrawn.push(appId),
    published: async () => new Map(),
    ensureFallback: async () => undefined,
  };
  return { publisher, writes, withdrawn };
}

/** The registry as DirectRoutes sees it: one app in `phase`, served by `sandbox`. */
function oneApp(serving: () => Partial<Sandbox> | undefined, phase: () => string = () => 'Ready') {
  const hooks: { settle?: (appId: string) => Promise<void> } = {};
  const registry = {
    routeWith: (routes: { settle: (appId: string) => Promise<void> }) => {
      hooks.settle = routes.settle;
    },
    on: () => () => undefined,
    ids: () => ['shop'],
    phase: () => phase(),
    serving: () => serving(),
    touch: () => undefined,
  } as unknown as AppRegistry;
  return { registry, hooks };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('DirectRoutes: what a deploy waits for before it answers', () => {
  const urls = new PublicUrls();
  urls.setBase('http://localhost:8080');
  const store = { getAppSummary: () => ({ access: 'public' }) } as never;

  it('an app with no route yet is answered at once (the fallback serves it); the route follows', async () => {
    const { publisher, writes } = heldPublisher();
    const { registry, hooks } = oneApp(() => ({ socketPath: '/run/a.sock' }));
    const routes = new DirectRoutes(store, registry, urls, publisher, () => undefined);
    let settled = false;
    const settle = hooks.settle?.('shop').then(() => (settled = true));
    await turn();
    expect(settled).toBe(true);
    expect(writes.map((w) => w.appId)).toEqual(['shop']);
    await settle;
    // The route is still written, and counts once it is.
    const written = routes.sync('shop');
    writes[0]?.done();
    await written;
    expect(writes).toHaveLength(1);
  });

  it('a route that still sends visitors to the version before is moved before the answer', async () => {
    const { publisher, writes } = heldPublisher();
    let socket = '/run/v1.sock';
    const { registry, hooks } = oneApp(() => ({ socketPath: socket }));
    const routes = new DirectRoutes(store, registry, urls, publisher, () => undefined);
    const first = routes.sync('shop');
    await turn();
    writes[0]?.done();
    await first;

    socket = '/run/v2.sock';
    let settled = false;
    const settle = hooks.settle?.('shop').then(() => (settled = true));
    await turn();
    await turn();
    expect(writes.map((w) => w.target)).toEqual([
      JSON.stringify({ socket: '/run/v1.sock' }),
      JSON.stringify({ socket: '/run/v2.sock' }),
    ]);
    expect(settled).toBe(false);
    writes[1]?.done();
    await settle;
    expect(settled).toBe(true);
  });

  it('a deploy under way leaves the route on the release that serves; no serving, no route', async () => {
    const { publisher, writes, withdrawn } = heldPublisher();
    let phase = 'Ready';
    let serving: Partial<Sandbox> | undefined = { socketPath: '/run/v1.sock' };
    const { registry } = oneApp(
      () => serving,
      () => phase,
    );
    const routes = new DirectRoutes(store, registry, urls, publisher, () => undefined);
    const first = routes.sync('shop');
    await turn();
    writes[0]?.done();
    await first;

    for (const step of ['Pending', 'Claiming', 'Starting']) {
      phase = step;
      await routes.sync('shop');
    }
    expect(withdrawn).toEqual([]);
    expect(writes).toHaveLength(1);

    // The serving release went (it crashed, or the app was suspended): visitors go to the router.
    serving = undefined;
    await routes.sync('shop');
    expect(withdrawn).toEqual(['shop']);
  });
});
