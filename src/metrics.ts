import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Status classes, the label of an app's request counter: a fixed set per app. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];
export type StatusCounts = Partial<Record<StatusClass, number>>;

export const statusClass = (status: number): StatusClass =>
  STATUS_CLASSES[Math.min(4, Math.max(0, Math.floor(status / 100) - 1))] ?? '5xx';

/** Prometheus metrics shared by every part of Slipway (one registry per server). */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'slipway_http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'slipway_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /** Visitors' requests to apps, on either data path; a deleted app's series are removed. */
  readonly appRequests = new Counter({
    name: 'slipway_app_requests_total',
    help: 'Requests to apps by app and status class (1xx..5xx)',
    labelNames: ['app', 'code'] as const,
    registers: [this.registry],
  });
  /** `outcome` is `ok` or the error body's code: a fixed set, so the series count stays bounded. */
  readonly mcpToolCalls = new Counter({
    name: 'slipway_mcp_tool_calls_total',
    help: 'MCP tool calls by tool and outcome (ok or the error code)',
    labelNames: ['tool', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly mcpToolDuration = new Histogram({
    name: 'slipway_mcp_tool_call_duration_seconds',
    help: 'MCP tool call latency by tool and outcome',
    labelNames: ['tool', 'outcome'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'slipway_' });
  }
}
