import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';

const election = (leaderElection: Record<string, unknown>, instance: string | null = 'prod') =>
  parseConfig({
    runtime: {
      backend: 'kubernetes',
      kubernetes: { ...(instance ? { instance } : {}), leaderElection },
    },
  }).runtime.kubernetes.leaderElection;

describe('runtime.kubernetes.leaderElection', () => {
  it('is off by default, with a 15 s lease renewed every 5 s', () => {
    expect(loadConfig({}).runtime.kubernetes.leaderElection).toEqual({
      enabled: false,
      leaseSeconds: 15,
      renewSeconds: 5,
    });
    expect(election({ enabled: true, peerURL: 'http://10.1.2.3:8080' })).toMatchObject({
      enabled: true,
      peerURL: 'http://10.1.2.3:8080',
    });
  });

  it('needs the instance: the replicas find their Lease by its name', () => {
    expect(() => election({ enabled: true }, null)).toThrow(ConfigError);
    expect(() => election({ enabled: true }, null)).toThrow(
      /runtime\.kubernetes\.leaderElection: enabled needs runtime\.kubernetes\.instance/,
    );
  });

  it.each([
    [{ leaseSeconds: 5, renewSeconds: 5 }, /renewSeconds must be shorter than leaseSeconds/],
    [{ leaseSeconds: 1 }, /leaseSeconds/],
    [{ renewSeconds: 0 }, /renewSeconds/],
    [{ peerURL: 'ftp://10.1.2.3' }, /peerURL/],
  ])('refuses %j, naming the key', (value, message) => {
    expect(() => election(value)).toThrow(ConfigError);
    expect(() => election(value)).toThrow(message);
  });
});
