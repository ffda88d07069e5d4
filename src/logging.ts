import { pino, type Logger } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** How every part of the control plane logs: through the logger, or a test's stand-in. */
export type Log = (level: LogLevel, msg: string, extra?: object) => void;

/** `false` silences it (tests); `{level}` is `server.logLevel`. */
export type LogSetting = boolean | { level: string };

/**
 * The one logger of a running control plane, made by the composition root and handed to fastify
 * and to the services alike. Credentials never reach it, whatever route or plugin logs a request:
 * no authorization or cookie headers, and no query string (a share or OAuth token may ride in one).
 */
export function createLogger(setting: LogSetting): Logger {
  if (setting === false) return pino({ enabled: false });
  return pino({
    level: setting === true ? 'info' : setting.level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method?: string; url?: string }) => ({
        method: req.method,
        url: pathOf(req.url ?? ''),
      }),
    },
  });
}

/** The path of a request URL, without its query string (which may carry a token). */
export function pathOf(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? url : url.slice(0, at);
}

/** The services' log function, over the logger. */
export const serviceLog =
  (logger: Logger): Log =>
  (level, msg, extra) =>
    logger[level](extra ?? {}, msg);
