import { describe, expect, it } from 'vitest';
import type { AppLogLine, LogFollower } from '../../src/actors/log-ring.js';
import type { AppEvent, AppEventListener, AppRegistry } from '../../src/actors/registry.js';
import type { Identity } from '../../src/auth/identity.js';
import { DeployWatch, type ProgressUpdate } from '../../src/mcp/progress.js';

/** The part of the registry a watch uses: lifecycle events and an app's log lines. */
class FakeRegistry {
  private listeners = new Set<AppEventListener>();
  private followers = new Set<LogFollower>();
  readonly lines: AppLogLine[] = [];

  on(listener: AppEventListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
  followLogs(_appId: string, follower: LogFollower): () => void {
    this.followers.add(follower);
    return () => void this.followers.delete(follower);
  }
  logs(_appId: string, version?: number): AppLogLine[] {
    return this.lines.filter((l) => version === undefined || l.version === version);
  }
  event(kind: AppEvent['kind'], version: number, owner = 'alice'): void {
    const event: AppEvent = {
      kind,
      app_id: 'app',
      owner,
      phase: 'Pending',
      version,
      reason: '',
      message: '',
      time: new Date().toISOString(),
      initiator: 'user',
    };
    for (const listener of this.listeners) listener(event);
  }
  line(version: number, text: string, stream: AppLogLine['stream'] = 'stdout'): void {
    const line = { time: new Date().toISOString(), stream, text, version };
    this.lines.push(line);
    for (const follower of this.followers) follower.line(line);
  }
  note(version: number, text: string): void {
    this.line(version, `[slipway] ${text}`, 'system');
  }
}

const ALICE: Identity = {
  userId: 'alice',
  name: 'alice',
  role: 'user',
  scopes: [],
  mode: 'apikey',
};

function watch(lane: string, kind: 'deploy' | 'resume' = 'deploy') {
  const registry = new FakeRegistry();
  const updates: ProgressUpdate[] = [];
  const w = new DeployWatch({
    registry: registry as unknown as AppRegistry,
    identity: ALICE,
    appId: 'app',
    kind,
    laneOf: () => lane,
    sink: (u) => updates.push(u),
  });
  return { registry, updates, w };
}

describe('DeployWatch: progress of one deploy from its events and log lines', () => {
  it('reports queued, installing (with npm lines), building, starting, health-checking, switching and serving in order', () => {
    const { registry, updates, w } = watch('general');
    registry.event('deploy', 3);
    registry.note(3, 'version 3 starting');
    registry.note(3, 'version 3 building: installing its dependencies');
    registry.line(3, '[install] $ npm ci');
    registry.line(3, '[install] ');
    registry.line(3, '[install] added 1 package in 1s');
    registry.line(3, '[install] $ npm run build');
    registry.note(3, 'version 3 installed in 2.0 s (npm ci, npm run build)');
    registry.note(3, 'version 3: started, waiting for it to answer');
    registry.note(3, 'switching traffic to version 3');
    registry.note(3, 'serving version 3');
    w.stop();
    expect(updates.map((u) => u.message)).toEqual([
      'queued',
      'installing dependencies',
      'installing dependencies: added 1 package in 1s',
      'building: npm run build',
      'starting the app: installed in 2.0 s (npm ci, npm run build)',
      'waiting for the app to answer',
      'switching traffic to the new version',
      'serving',
    ]);
    const values = updates.map((u) => u.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(w.stage).toBe('serving');
  });

  it('says starting at once on the fast lane, and ignores other versions and late notes', () => {
    const { registry, updates, w } = watch('fast');
    registry.note(2, 'serving version 2'); // before the deploy: not this call's
    registry.event('deploy', 3);
    registry.note(2, 'version 2 exited with code 1, restarting');
    registry.note(3, 'version 3 starting');
    expect(w.stage).toBe('starting');
    registry.note(3, 'version 3 starting'); // again: no step back, no repeat
    w.stop();
    registry.note(3, 'serving version 3'); // after stop: nothing
    expect(updates.map((u) => u.message)).toEqual(['queued', 'starting the app']);
  });

  it("follows nothing of another owner's app, and records a newer deploy and a delete", () => {
    const { registry, updates, w } = watch('fast');
    registry.event('deploy', 1, 'bob');
    registry.note(1, 'version 1 starting');
    expect(w.version).toBeUndefined();
    registry.event('deploy', 4);
    registry.event('deploy', 5);
    registry.event('delete', 5);
    w.stop();
    expect(w).toMatchObject({ version: 4, newest: 5, deleted: true });
    expect(updates.map((u) => u.message)).toEqual(['queued']);
  });

  it('reports a rollback when the version it watched went live and crashed meanwhile', () => {
    const { registry, updates, w } = watch('fast');
    registry.event('deploy', 3);
    registry.note(3, 'version 3 starting');
    registry.note(3, 'serving version 3');
    const crashed =
      'version 3 failed: CrashedAfterSwitch: version 3 exited with code 1 within 10s of going live; version 2 serves again';
    registry.note(3, crashed);
    w.stop();
    expect(updates.map((u) => u.message)).toEqual([
      'queued',
      'starting the app',
      'serving',
      crashed,
    ]);
    const values = updates.map((u) => u.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(updates.at(-1)).toMatchObject({ progress: 8, total: 8 });
  });

  it('picks up a wake note written before the resume event', () => {
    const { registry, updates, w } = watch('general', 'resume');
    registry.note(2, 'woke; starting version 2');
    registry.event('resume', 2);
    registry.note(2, 'version 2: its built tree restored, no install');
    registry.note(2, 'serving version 2');
    w.stop();
    expect(updates.map((u) => u.message)).toEqual([
      'queued',
      'starting the app: woke; starting version 2',
      'serving',
    ]);
  });
});
