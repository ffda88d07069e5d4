import { constants } from 'node:os';
import type { ExitReport } from '../../agent/protocol.js';
import type { AppExit } from '../runtime.js';

/**
 * How an app ended: the agent's own report when it made one (exact code or signal), else bwrap's
 * status, which gives a signalled child as 128 + n like a shell does. The lines are the host's
 * (every line up to the end has been read by the time the process closes), else the agent's.
 */
export function appExit(
  agent: ExitReport | undefined,
  end: { code: number | null; signal: string | null },
  hostLines: string[],
): AppExit {
  if (agent) {
    return {
      code: agent.code,
      signal: agent.signal,
      lastLines: hostLines.length > 0 ? hostLines : agent.lastLines,
    };
  }
  if (end.signal) return { code: null, signal: end.signal, lastLines: hostLines };
  const signo = end.code !== null && end.code > 128 ? end.code - 128 : undefined;
  const name = Object.entries(constants.signals).find(([, n]) => n === signo)?.[0];
  return name
    ? { code: null, signal: name, lastLines: hostLines }
    : { code: end.code, signal: null, lastLines: hostLines };
}
