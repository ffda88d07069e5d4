import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installRouteTable } from '../../src/http/route-table.js';

describe('route table', () => {
  let app: FastifyInstance | undefined;
  afterEach(() => app?.close());

  it('records routes of nested prefixed plugins, method arrays and HEAD twins', async () => {
    app = Fastify();
    installRouteTable(app);
    app.get('/top', async () => 'ok');
    await app.register(
      async (child) => {
        child.route({ method: ['POST', 'DELETE'], url: '/items/:id', handler: async () => 'ok' });
        await child.register(
          async (grandchild) => {
            grandchild.get('/', async () => 'root');
          },
          { prefix: '/docs' },
        );
      },
      { prefix: '/v1' },
    );
    await app.ready();
    const routes = app.routeTable.list().map((r) => `${r.method} ${r.url}`);
    expect(routes.sort()).toEqual(
      [
        'GET /top',
        'HEAD /top',
        'POST /v1/items/:id',
        'DELETE /v1/items/:id',
        'GET /v1/docs',
        'HEAD /v1/docs',
        // fastify registers the slash twin without running onRoute for it
        'GET /v1/docs/',
        'HEAD /v1/docs/',
      ].sort(),
    );
  });

  it('adds no slash twin where fastify registered none', async () => {
    app = Fastify();
    installRouteTable(app);
    await app.register(
      async (child) => {
        child.get('/', { prefixTrailingSlash: 'no-slash' }, async () => 'root');
      },
      { prefix: '/only' },
    );
    await app.ready();
    const routes = app.routeTable.list().map((r) => `${r.method} ${r.url}`);
    expect(routes).toContain('GET /only');
    expect(routes).not.toContain('GET /only/');
    expect((await app.inject('/only/')).statusCode).toBe(404);
  });
});
