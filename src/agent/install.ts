import { rmSync } from 'node:fs';
import { clearApp, uploadArtifact } from './artifact.js';
import { errorText, info, warn } from './diag.js';
import type { InjectContext } from './inject.js';
import { nodeSteps, NPM_CACHE, pythonSteps } from './install-plan.js';
import { runStep, type InstallStep } from './install-step.js';
import { APP_DIR, type InstallRequest, type InstallResponse } from './protocol.js';
import { killStrays } from './strays.js';
import { BadSourceError, pullAndUnpack } from './unpack.js';

type Answer = { status: number; body: InstallResponse };

/**
 * The general lane's first call: pull and unpack the source, then run the template's install
 * steps in /app. 200 installed (the inject that follows starts the app from /app as it is now),
 * 424 a step failed or ran out of time, 400 the source is unusable, 409 this sandbox was used.
 */
export async function runInstall(ctx: InjectContext, req: InstallRequest): Promise<Answer> {
  if (ctx.phase !== 'idle') {
    return { status: 409, body: { ok: false, error: `sandbox is ${ctx.phase}` } };
  }
  ctx.phase = 'installing';
  const t0 = performance.now();
  const deadline = Date.now() + (req.timeoutMs > 0 ? req.timeoutMs : 600_000);
  const fail = (status: number, error: string): Answer => {
    ctx.phase = 'failed';
    return { status, body: { ok: false, error } };
  };
  if (req.artifact?.restore) return restore(ctx, req, req.artifact.key, t0);
  try {
    await pullAndUnpack(req.sourceKey, ctx.token, APP_DIR, false, req.sourceUrl);
  } catch (err) {
    const status = err instanceof BadSourceError ? 400 : 502;
    return fail(status, `cannot fetch the source: ${errorText(err)}`);
  }
  const tPull = performance.now();
  let steps: InstallStep[];
  try {
    steps = plan(ctx, req);
  } catch (err) {
    return fail(err instanceof BadSourceError ? 400 : 500, errorText(err));
  }
  try {
    for (const step of steps) {
      const result = await runStep(step, deadline);
      if (!result.ok) {
        ctx.phase = 'failed';
        return { status: 424, body: { ok: false, install: result.failure } };
      }
    }
  } finally {
    // The cache sits on tmpfs, which is memory the app would otherwise pay for.
    rmSync(NPM_CACHE, { recursive: true, force: true });
    const killed = await killStrays([ctx.python?.pid]);
    if (killed > 0) info('killed what the install step left running', { processes: killed });
  }
  const tInstalled = performance.now();
  // Before the app's first line runs: what is packed is what the install made, nothing more.
  const artifact = req.artifact ? await store(req.artifact.key, ctx.token, deadline) : undefined;
  ctx.phase = 'installed';
  ctx.installed = req.sourceKey;
  ctx.built = steps.some((step) => step.builds === true);
  const ms = {
    pull: round(tPull - t0),
    install: round(tInstalled - tPull),
    ...(artifact ? { artifact: round(performance.now() - tInstalled) } : {}),
  };
  const body = { ok: true as const, ms, steps: steps.map((s) => s.command) };
  return { status: 200, body: artifact ? { ...body, artifact } : body };
}

/** The release's built tree instead of an install: the steps are planned, never run. */
async function restore(ctx: InjectContext, req: InstallRequest, key: string, t0: number) {
  try {
    await pullAndUnpack(key, ctx.token, APP_DIR, true);
  } catch (err) {
    clearApp();
    ctx.phase = 'idle';
    const error = `the built artifact cannot be used: ${errorText(err)}`;
    return { status: 410, body: { ok: false as const, error } };
  }
  let steps: InstallStep[];
  try {
    steps = plan(ctx, req);
  } catch (err) {
    ctx.phase = 'failed';
    return { status: 400, body: { ok: false as const, error: errorText(err) } };
  }
  ctx.phase = 'installed';
  ctx.installed = req.sourceKey;
  ctx.built = steps.some((step) => step.builds === true);
  const ms = { pull: round(performance.now() - t0), install: 0 };
  return { status: 200, body: { ok: true as const, ms, steps: [], artifact: 'restored' as const } };
}

/** A failed upload costs the next wake an install, not this deploy: it is only logged. */
async function store(key: string, token: string, deadline: number) {
  try {
    const bytes = await uploadArtifact(key, token, deadline);
    info('built tree stored', { bytes });
    return 'stored' as const;
  } catch (err) {
    warn('built tree not stored', { error: errorText(err) });
    return 'not stored' as const;
  }
}

function plan(ctx: InjectContext, req: InstallRequest): InstallStep[] {
  if (ctx.template === 'node') {
    if (!req.npm) throw new Error('the host sent no npm configuration for a node install');
    return nodeSteps(req, req.npm);
  }
  if (ctx.template === 'python') {
    if (!req.pip || !ctx.pythonBin) {
      throw new Error('the host sent no package index for a python install');
    }
    return pythonSteps(req, req.pip, ctx.pythonBin);
  }
  // A static site is built when it has a build script or runtime.build; else it is served as is.
  if (!req.npm) return [];
  return nodeSteps(req, req.npm, 'builds');
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
