/** What the control plane tells the front door it starts (JSON in SLIPWAY_FRONT). */
export interface FrontSettings {
  /** Protocol between the two; a control plane replaces a front door of another one. */
  v: number;
  host: string;
  port: number;
  /** The control plane's unix socket. */
  socket: string;
  holdMs: number;
  idleMs: number;
  /**
   * Behind the native front door: listen on this unix socket instead of `host:port`, for
   * connections that bring their own PROXY line (HAProxy's, naming the visitor).
   */
  listenPath?: string;
}

export const FRONT_PROTOCOL = 1;

export function readFrontSettings(text: string | undefined): FrontSettings {
  const value = JSON.parse(text ?? '') as Partial<FrontSettings>;
  const ok =
    value.v === FRONT_PROTOCOL &&
    typeof value.host === 'string' &&
    Number.isInteger(value.port) &&
    typeof value.socket === 'string' &&
    typeof value.holdMs === 'number' &&
    typeof value.idleMs === 'number' &&
    (value.listenPath === undefined || typeof value.listenPath === 'string');
  if (!ok) throw new Error(`SLIPWAY_FRONT is not a front door's settings: ${text}`);
  return value as FrontSettings;
}
