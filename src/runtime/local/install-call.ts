import type {
  InstallFailure,
  InstallRequest,
  InstallResponse,
  NpmInstall,
  PipInstall,
} from '../../agent/protocol.js';
import { formatDuration } from '../../config/duration.js';
import { RuntimeError, type InjectSpec } from '../runtime.js';
import type { PackageIndex } from '../egress/egress-rules.js';
import type { EgressDoor } from './egress-door.js';
import { artifactKey, type ArtifactStore } from './artifact-store.js';
import { laneProblem } from './lanes.js';
import { indexHosts, type PackageHosts } from './package-hosts.js';
import type { LocalSandbox } from './sandbox.js';
import { callUntilClosed, endSoon, errorText, type Outcome } from './sandbox-call.js';
import type { Log } from '../../logging.js';

export interface InstallDeps {
  installTimeoutMs: number;
  /** Built trees by release; without it every start installs. */
  artifacts?: ArtifactStore;
  /** The operator's `runtime.egress.allowPrivate`. */
  allowPrivate: string[];
  /** The host's package indexes, read once at runtime start. */
  packageHosts: () => Promise<PackageHosts>;
  log: Log;
}

/** Past the agent's own deadline, how long the host waits for an agent whose loop is blocked. */
const HOST_GRACE_MS = 1_000;

/**
 * The general lane's install: POST /install while the egress door also lets the sandbox reach the
 * host's package index (as a private exception too: mirrors often sit on private addresses). The
 * door is back to exactly the app's allowed_hosts before this returns or throws, so the app's
 * first line of code already runs under its own rules. With a source hash, a release installed
 * before is restored from its built tree instead (no index reachable), and a fresh install leaves
 * one behind.
 */
export async function installInto(
  sandbox: LocalSandbox,
  spec: InjectSpec,
  door: EgressDoor,
  deps: InstallDeps,
): Promise<void> {
  const tool = toolFor(spec.template, await deps.packageHosts());
  if (tool === undefined) return;
  const index = indexHosts(tool);
  const request: InstallRequest = {
    sourceKey: spec.sourceKey,
    env: spec.env,
    timeoutMs: deps.installTimeoutMs,
    ...(spec.build !== undefined ? { build: spec.build } : {}),
    ...('cli' in tool ? { npm: tool } : { pip: tool }),
  };
  const key = keyOf(spec, tool, deps.artifacts);
  try {
    if (key !== undefined && (await restored(sandbox, spec, request, key, deps))) return;
    if (key !== undefined) {
      // The grant is spent by the one upload the agent makes after its install.
      sandbox.allowSource(spec.sourceKey, { key, mode: 'put' });
      request.artifact = { key, restore: false };
    }
    await install(sandbox, spec, door, deps, request, index);
  } finally {
    sandbox.allowSource(spec.sourceKey);
  }
}

/**
 * Unpacks the release's built tree in place of an install, with egress as narrow as the app's:
 * true when it did. An artifact the agent cannot use is dropped, and the install runs instead.
 */
async function restored(
  sandbox: LocalSandbox,
  spec: InjectSpec,
  request: InstallRequest,
  key: string,
  deps: InstallDeps,
): Promise<boolean> {
  if (!deps.artifacts?.has(key)) return false;
  const where = { sandbox: sandbox.id, app: spec.appId };
  sandbox.allowSource(spec.sourceKey, { key, mode: 'get' });
  const body = { ...request, artifact: { key, restore: true } };
  const timeoutMs = deps.installTimeoutMs + HOST_GRACE_MS;
  const outcome = await callUntilClosed(sandbox, '/install', body, timeoutMs);
  if (outcome.kind === 'reply' && outcome.reply.status === 200) {
    const answer = outcome.reply.body as Extract<InstallResponse, { ok: true }>;
    deps.log('info', 'app restored from its built tree, no install', {
      ...where,
      agentMs: answer.ms,
    });
    sandbox.note(`version ${spec.version}: its built tree restored, no install`);
    return true;
  }
  if (outcome.kind === 'reply' && outcome.reply.status === 410) {
    deps.artifacts.remove(key);
    deps.log('info', 'built tree unusable, removed; installing', {
      ...where,
      reply: outcome.reply.body,
    });
    return false;
  }
  throw await failure(sandbox, outcome, deps.installTimeoutMs);
}

/** No key, no artifact: a spec without a source hash or an owner installs every time. */
function keyOf(
  spec: InjectSpec,
  tool: NpmInstall | PipInstall,
  artifacts: ArtifactStore | undefined,
): string | undefined {
  if (!artifacts || !spec.sourceHash || spec.ownerId === undefined) return undefined;
  const index = 'cli' in tool ? [tool.registry, tool.scoped] : [tool.index];
  return artifactKey({
    appId: spec.appId,
    ownerId: spec.ownerId,
    sourceHash: spec.sourceHash,
    template: spec.template,
    build: spec.build,
    env: spec.env,
    toolchain: JSON.stringify([process.version, ...index]),
  });
}

async function install(
  sandbox: LocalSandbox,
  spec: InjectSpec,
  door: EgressDoor,
  deps: InstallDeps,
  request: InstallRequest,
  index: PackageIndex[],
): Promise<void> {
  const where = { sandbox: sandbox.id, app: spec.appId };
  door.setRules({
    allowedHosts: spec.allowedHosts,
    allowPrivate: [...deps.allowPrivate, ...index.map((i) => i.target)],
    indexes: index,
  });
  let outcome: Outcome;
  const started = performance.now();
  try {
    deps.log('info', 'install started', { ...where, index: index.map((i) => i.target) });
    sandbox.note(`version ${spec.version} building: installing its dependencies`);
    const timeoutMs = deps.installTimeoutMs + HOST_GRACE_MS;
    outcome = await callUntilClosed(sandbox, '/install', request, timeoutMs);
  } finally {
    door.setRules({ allowedHosts: spec.allowedHosts, allowPrivate: deps.allowPrivate });
  }
  if (outcome.kind === 'reply' && outcome.reply.status === 200) {
    const body = outcome.reply.body as Extract<InstallResponse, { ok: true }>;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const steps = body.steps.length > 0 ? ` (${body.steps.join(', ')})` : '';
    sandbox.note(`version ${spec.version} installed in ${seconds} s${steps}`);
    deps.log('info', 'app installed', {
      ...where,
      steps: body.steps,
      agentMs: body.ms,
      ...(body.artifact ? { builtTree: body.artifact } : {}),
    });
    return;
  }
  throw await failure(sandbox, outcome, deps.installTimeoutMs);
}

/** The install config for the template: npm builds static sites too. */
function toolFor(template: string, hosts: PackageHosts): NpmInstall | PipInstall | undefined {
  // planStart asked laneUnavailable already; this holds should a caller skip it.
  const problem = laneProblem(template, 'general', hosts);
  if (problem) throw new RuntimeError(problem, false, 'LaneUnavailable');
  return template === 'python' ? hosts.pip : hosts.npm;
}

async function failure(
  sandbox: LocalSandbox,
  outcome: Outcome,
  timeoutMs: number,
): Promise<RuntimeError> {
  const limit = `${formatDuration(timeoutMs)} (runtime.installTimeout)`;
  if (outcome.kind === 'reply') {
    const body = outcome.reply.body as InstallResponse | undefined;
    if (outcome.reply.status === 424 && body && 'install' in body) {
      return new RuntimeError(stepFailed(body.install, limit), false, 'InstallFailed');
    }
    const message = body && 'error' in body ? body.error : `agent answered ${outcome.reply.status}`;
    // 400: the source cannot be installed as it is; retrying changes nothing.
    return new RuntimeError(message, outcome.reply.status !== 400);
  }
  const end = outcome.kind === 'closed' ? outcome.end : await endSoon(sandbox);
  if (end) {
    const exit = sandbox.exitReport(end);
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code ?? 'unknown'}`;
    // SIGKILL mid-install is nearly always the memory limit: node_modules live on tmpfs.
    const hint = exit.signal === 'SIGKILL' ? ' (out of memory? see runtime.memoryLimitMB)' : '';
    const message = `the sandbox exited with ${how} during the install${hint}${lines(exit.lastLines)}`;
    return new RuntimeError(message, false, 'InstallFailed');
  }
  const why = errorText(outcome.kind === 'broken' ? outcome.err : undefined);
  if (/within \d+ ms/.test(why)) {
    return new RuntimeError(`the install did not finish within ${limit}`, false, 'InstallFailed');
  }
  return new RuntimeError(`install failed: ${why}`, true);
}

/** `npm ci failed with exit code 1; last lines: ...`: what the user reads in the app's message. */
export function stepFailed(step: InstallFailure, limit: string): string {
  const what = step.timedOut
    ? `did not finish within ${limit}`
    : step.signal
      ? `was killed by signal ${step.signal}`
      : `failed with exit code ${step.code ?? 'unknown'}`;
  return `${step.command} ${what}${lines(step.lastLines)}`;
}

function lines(lastLines: string[]): string {
  return lastLines.length > 0 ? `; last lines:\n${lastLines.join('\n')}` : '';
}
