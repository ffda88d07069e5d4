/**
 * Deploys' sandboxes started ahead of their app's machine (issue 31). A deploy knows what its
 * version will run once its upload is classified: the start plan its rows will give. Its rows,
 * its actor and its machine's first steps then take a few ms of the control plane, while a
 * sandbox could already be unpacking and starting the app. So the claim and the inject begin
 * there, and the machine's claim takes that sandbox when the plan it reads from the stored rows
 * is exactly the one begun; its inject then waits for the start under way. A head start nobody
 * takes (the rows were refused, another deploy came, the plan differs) is reaped.
 */
import type { Log } from '../logging.js';
import type { InjectSpec, InjectStages, Runtime, Sandbox, Upload } from '../runtime/runtime.js';
import { HeldEvents } from './held-events.js';
import { errorMessage } from './types.js';

/** A sandbox claimed and being started for one version, ahead of its app's machine. */
export interface HeadStart {
  /** The claimed sandbox, its events held back; undefined when the claim failed. */
  readonly claimed: Promise<{ sandbox: Sandbox; events: HeldEvents } | undefined>;
  /** Lets its lines through and resolves (or rejects) as the runtime's inject does. */
  run(): Promise<InjectStages | void>;
  /** The machine has the inject's answer: its exit may come now, as a fresh start's would. */
  answered(): void;
  /** Where it spent its time beside the deploy's own stages, in ms: `ahead-claim` and so on. */
  readonly timings: Record<string, number>;
}

/** A head start no machine took by then is reaped (a deploy takes it within a few ms). */
const UNTAKEN_MS = 30_000;

interface Entry {
  version: number;
  /** The spec it runs, serialized: a take must ask for exactly this. */
  spec: string;
  head: HeadStart;
  timer: NodeJS.Timeout;
}

export class HeadStarts {
  /** At most one per app: a newer deploy's replaces an older one's. */
  private readonly byApp = new Map<string, Entry>();

  constructor(private readonly deps: { runtime: Runtime; log: Log }) {}

  /**
   * Claims a sandbox of `template` for the app and starts `spec` in it, from the `upload` in hand
   * (the runtime waits for the store where it must read from it).
   */
  begin(appId: string, template: string, spec: InjectSpec, upload: Upload): void {
    this.drop(appId);
    const { runtime, log } = this.deps;
    const began = performance.now();
    const timings: Record<string, number> = {};
    const claimed = runtime.claim(template, appId).then(
      (sandbox) => {
        timings['ahead-claim'] = performance.now() - began;
        return { sandbox, events: new HeldEvents(sandbox) };
      },
      (err: unknown) => {
        log('debug', 'head start: no sandbox claimed; the machine claims its own', {
          app: appId,
          err: errorMessage(err),
        });
        return undefined;
      },
    );
    const started = claimed.then(async (held) => {
      if (!held) return undefined;
      const injected = performance.now();
      const stages = await runtime.inject(held.sandbox, spec, upload);
      // As the deploy's own `inject` stage: the round trip, its parts inside the sandbox apart.
      let trip = performance.now() - injected;
      for (const [stage, ms] of Object.entries(stages ?? {})) {
        timings[`ahead-${stage}`] = ms;
        trip -= ms;
      }
      timings['ahead-inject'] = Math.max(0, trip);
      return stages;
    });
    // Its taker hears how it ended; one nobody took is only reaped.
    started.catch((err: unknown) =>
      log('debug', 'head start: the start failed', { app: appId, err: errorMessage(err) }),
    );
    const head: HeadStart = {
      claimed,
      timings,
      run: async () => {
        (await claimed)?.events.release();
        return started;
      },
      answered: () => void claimed.then((held) => held?.events.releaseExit()),
    };
    const timer = setTimeout(() => this.drop(appId, spec.version), UNTAKEN_MS);
    timer.unref();
    this.byApp.set(appId, { version: spec.version, spec: JSON.stringify(spec), head, timer });
  }

  /**
   * The app's head start when it runs exactly `spec`, now the taker's to hold and reap. One of
   * the same version that runs anything else is of no use to anyone: it is reaped. One of another
   * version waits for its own deploy's machine.
   */
  take(appId: string, spec: InjectSpec): HeadStart | undefined {
    const entry = this.byApp.get(appId);
    if (!entry || entry.version !== spec.version) return undefined;
    if (entry.spec !== JSON.stringify(spec)) {
      this.drop(appId);
      return undefined;
    }
    this.forget(appId, entry);
    return entry.head;
  }

  /** Reaps the app's head start (of `version` only, when one is named) if nobody took it. */
  drop(appId: string, version?: number): void {
    const entry = this.byApp.get(appId);
    if (!entry || (version !== undefined && entry.version !== version)) return;
    this.forget(appId, entry);
    void entry.head.claimed.then(async (held) => {
      if (!held) return;
      await this.deps.runtime.reap(held.sandbox).catch((err: unknown) =>
        this.deps.log('warn', 'head start: reaping its sandbox failed', {
          app: appId,
          sandbox: held.sandbox.id,
          err: errorMessage(err),
        }),
      );
    });
  }

  /** Server shutdown: every head start nobody took is reaped. */
  stop(): void {
    for (const appId of [...this.byApp.keys()]) this.drop(appId);
  }

  private forget(appId: string, entry: Entry): void {
    clearTimeout(entry.timer);
    this.byApp.delete(appId);
  }
}
