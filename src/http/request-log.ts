/**
 * Request logging that a busy server can afford: one debug line per request (method, path without
 * its query string, status, ms) and, at info, one aggregated `http requests` line per interval in
 * which there was traffic. fastify's own per-request info lines are turned off
 * (`disableRequestLogging`): under load they were most of the log. Query strings may carry tokens
 * and never reach the log; neither do headers.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { pathOf } from '../logging.js';

/** The levels at which the per-request line is written. */
const WRITES_DEBUG: ReadonlySet<string> = new Set(['debug', 'trace']);
/** Often enough to see a trend, rarely enough that the line costs nothing. */
export const REQUEST_SUMMARY_INTERVAL_MS = 60_000;
/** Durations kept per interval for the percentiles; past it, a uniform sample (reservoir). */
const MAX_SAMPLES = 10_000;

export interface RequestSummary {
  requests: number;
  '2xx': number;
  '3xx': number;
  '4xx': number;
  '5xx': number;
  p50Ms: number;
  p99Ms: number;
}

/** Counts and durations of one interval's requests. */
export class RequestStats {
  private count = 0;
  private readonly classes = { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  private samples: number[] = [];

  constructor(private readonly random: () => number = Math.random) {}

  record(status: number, ms: number): void {
    this.count += 1;
    const klass =
      `${Math.min(5, Math.max(2, Math.floor(status / 100)))}xx` as keyof typeof this.classes;
    this.classes[klass] += 1;
    if (this.samples.length < MAX_SAMPLES) this.samples.push(ms);
    else {
      const at = Math.floor(this.random() * this.count);
      if (at < MAX_SAMPLES) this.samples[at] = ms;
    }
  }

  /** The interval's summary, and a fresh start; undefined when there was no request. */
  take(): RequestSummary | undefined {
    if (this.count === 0) return undefined;
    const sorted = this.samples.sort((a, b) => a - b);
    const summary: RequestSummary = {
      requests: this.count,
      ...this.classes,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
    };
    this.count = 0;
    this.classes['2xx'] = this.classes['3xx'] = this.classes['4xx'] = this.classes['5xx'] = 0;
    this.samples = [];
    return summary;
  }
}

function percentile(sorted: number[], p: number): number {
  const at = Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
  return Math.round((sorted[Math.max(0, at)] ?? 0) * 10) / 10;
}

export interface RequestLogOptions {
  /** How often the aggregated line is written (when there was traffic); tests shorten it. */
  intervalMs?: number;
}

/**
 * Registers the debug line per request and the aggregated info line. The last interval's line is
 * written when the server closes, so a short run still leaves its summary.
 */
export function installRequestLog(app: FastifyInstance, opts: RequestLogOptions = {}): void {
  const stats = new RequestStats();
  const flush = (log: FastifyBaseLogger): void => {
    const summary = stats.take();
    if (summary) log.info(summary, 'http requests');
  };
  const timer = setInterval(() => flush(app.log), opts.intervalMs ?? REQUEST_SUMMARY_INTERVAL_MS);
  timer.unref();
  app.addHook('onResponse', (request, reply, done) => {
    const ms = reply.elapsedTime;
    stats.record(reply.statusCode, ms);
    // The line is only built when it is written: at info, a request costs its count alone.
    if (WRITES_DEBUG.has(request.log.level)) {
      request.log.debug(
        {
          method: request.method,
          path: pathOf(request.url),
          status: reply.statusCode,
          ms: Math.round(ms * 10) / 10,
        },
        'request completed',
      );
    }
    done();
  });
  app.addHook('onClose', async () => {
    clearInterval(timer);
    flush(app.log);
  });
}
