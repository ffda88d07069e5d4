import { describe, expect, it } from 'vitest';
import { AppTraffic } from '../../src/app-hosts/app-traffic.js';
import { Metrics, statusClass } from '../../src/metrics.js';

describe('app traffic', () => {
  it('files statuses under their class, out-of-range ones at the nearest end', () => {
    expect([101, 200, 204, 301, 404, 503, 99, 600].map(statusClass)).toEqual([
      '1xx',
      '2xx',
      '2xx',
      '3xx',
      '4xx',
      '5xx',
      '1xx',
      '5xx',
    ]);
  });

  it('logs one debug line per answered request, its query string left out', async () => {
    const lines: { level: string; msg: string; extra?: object }[] = [];
    const metrics = new Metrics();
    const traffic = new AppTraffic(metrics, (level, msg, extra) =>
      lines.push({ level, msg, extra }),
    );
    traffic.answered('shop', { method: 'GET', url: '/cart?token=secret' }, 200, 1.234);
    expect(lines).toEqual([
      {
        level: 'debug',
        msg: 'app request',
        extra: { app: 'shop', method: 'GET', path: '/cart', status: 200, ms: 1.2 },
      },
    ]);
    traffic.counted('shop', { '2xx': 4, '5xx': 1 });
    const text = await metrics.registry.metrics();
    expect(text).toContain('slipway_app_requests_total{app="shop",code="2xx"} 5');
    expect(text).toContain('slipway_app_requests_total{app="shop",code="5xx"} 1');
    traffic.forget('shop');
    expect(await metrics.registry.metrics()).not.toContain('app="shop"');
  });
});
