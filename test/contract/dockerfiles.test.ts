// What can be checked of the container images without building them (no image registry here):
// stages, the final stage's user, dependencies, volumes and entry points against the repo.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  base: string;
  name?: string;
  body: Instruction[];
}

/** Stages of a Dockerfile: continuation lines joined, comments dropped. */
function parseDockerfile(file: string): Stage[] {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/\\\n/g, ' ');
  const stages: Stage[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    const op = (m[1] ?? '').toUpperCase();
    const args = (m[2] ?? '').trim();
    if (op === 'FROM') {
      const [base = '', , name] = args.split(/\s+/);
      stages.push({ base, ...(name ? { name } : {}), body: [] });
    } else {
      stages.at(-1)?.body.push({ op, args });
    }
  }
  return stages;
}

const args = (stage: Stage, op: string) => stage.body.filter((i) => i.op === op).map((i) => i.args);
const finalStage = (stages: Stage[]) => stages.at(-1) as Stage;
/** The exec form (JSON array) of ENTRYPOINT/CMD/VOLUME. */
const execForm = (text: string | undefined) => JSON.parse(text ?? 'null') as string[];
/** The Node version and Debian suite test/k8s/images.sh builds the images with, without Docker. */
const imagesScript = (() => {
  const text = readFileSync(join(ROOT, 'test/k8s/images.sh'), 'utf8');
  const node = /^NODE_VERSION=\$\{SLIPWAY_IMAGE_NODE:-([\d.]+)\}/m.exec(text)?.[1] ?? '';
  const suite = /^DEBIAN_SUITE=([a-z]+)$/m.exec(text)?.[1] ?? '';
  return { node, suite };
})();
const dockerignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
  .split('\n')
  .filter((l) => l && !l.startsWith('#'));

describe.each(['Dockerfile', 'Dockerfile.agent'])('%s', (file) => {
  const stages = parseDockerfile(file);
  const last = finalStage(stages);

  it('is multi-stage, ending on a slim image of the newest LTS Node (26)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(last.base).toMatch(/^node:26(\.[\d.]+)?-[a-z]+-slim$/);
  });

  it("uses the Node and Debian release the test cluster's images are built from, in every stage", () => {
    expect(imagesScript.node).toMatch(/^26\.\d+\.\d+$/);
    expect(imagesScript.suite).toMatch(/^[a-z]+$/);
    for (const stage of stages) {
      expect(stage.base).toMatch(
        new RegExp(
          `^node:${imagesScript.node.replaceAll('.', '\\.')}-${imagesScript.suite}(-slim)?$`,
        ),
      );
    }
  });

  it('runs as a non-root numeric uid, set once (never back to root)', () => {
    const users = args(last, 'USER');
    expect(users).toHaveLength(1);
    const [uid, gid] = (users[0] ?? '').split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    if (gid !== undefined) expect(Number(gid)).toBeGreaterThan(0);
  });

  it('installs no dev dependencies: production installs only, and none in the final stage', () => {
    for (const run of stages.flatMap((s) => args(s, 'RUN'))) {
      if (/\bnpm (ci|install|i)\b/.test(run)) expect(run).toContain('--omit=dev');
    }
    expect(args(last, 'RUN').some((r) => /\bnpm (ci|install|i)\b/.test(r))).toBe(false);
  });

  it('copies only files that exist in the repo and are not docker-ignored', () => {
    for (const stage of stages) {
      for (const copy of args(stage, 'COPY').filter((c) => !c.startsWith('--from='))) {
        const parts = copy.split(/\s+/).filter((p) => !p.startsWith('--'));
        for (const source of parts.slice(0, -1)) {
          expect(existsSync(join(ROOT, source)), `${file}: COPY ${source}`).toBe(true);
          expect(dockerignore, `${file}: ${source} is docker-ignored`).not.toContain(source);
        }
      }
    }
    expect(dockerignore).toEqual(expect.arrayContaining(['node_modules', '.git', 'data']));
  });

  it('keeps writes under declared volumes: /tmp and HOME there', () => {
    const volumes = execForm(args(last, 'VOLUME')[0]);
    expect(volumes).toContain('/tmp');
    const env = args(last, 'ENV').join(' ');
    expect(env).toMatch(/\bHOME=\/tmp\b/);
    expect(env).toMatch(/\bnpm_config_cache=\/tmp\//);
  });
});

describe('Dockerfile (control plane)', () => {
  const last = finalStage(parseDockerfile('Dockerfile'));

  it('starts what `npm start` starts, from a file in the repo', () => {
    const entry = execForm(args(last, 'ENTRYPOINT')[0]);
    expect(entry.slice(0, 3)).toEqual(['node', '--import', 'tsx']);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: { start: string };
    };
    expect(pkg.scripts.start).toBe(`tsx ${entry[3]}`);
    // WORKDIR holds a copy of the repo's src/: the path is relative to both.
    expect(args(last, 'COPY')).toContain('src ./src');
    expect(statSync(join(ROOT, entry[3] ?? '')).isFile()).toBe(true);
  });

  it('keeps its data on the /data volume, listens on all interfaces, and has a health check', () => {
    expect(execForm(args(last, 'VOLUME')[0])).toEqual(['/data', '/tmp']);
    const env = args(last, 'ENV').join(' ');
    expect(env).toMatch(/\bSVC_DATA_DIR=\/data\b/);
    expect(env).toMatch(/\bSVC_LISTEN=0\.0\.0\.0:8080\b/);
    expect(args(last, 'HEALTHCHECK')[0]).toContain('http://127.0.0.1:8080/healthz');
  });
});

describe('Dockerfile.agent (sandbox pods)', () => {
  const stages = parseDockerfile('Dockerfile.agent');
  const last = finalStage(stages);
  const bundleRun = stages.flatMap((s) => args(s, 'RUN')).find((r) => r.includes('bundleAgent'));

  it('runs the one bundled file, which the build stage makes from src/agent/pod-main.ts', () => {
    expect(execForm(args(last, 'ENTRYPOINT')[0])).toEqual(['node', '/opt/slipway/agent.mjs']);
    expect(args(last, 'COPY')).toContain(
      '--from=build /opt/slipway/agent.mjs /opt/slipway/agent.mjs',
    );
    expect(bundleRun).toContain("import('./src/runtime/local/agent-bundle.ts')");
    expect(bundleRun).toContain("bundleAgent('/opt/slipway/agent.mjs', 'pod')");
    expect(existsSync(join(ROOT, 'src/runtime/local/agent-bundle.ts'))).toBe(true);
    expect(existsSync(join(ROOT, 'src/agent/pod-main.ts'))).toBe(true);
  });

  it("the build stage's bundle command makes a self-contained file node accepts", () => {
    const dir = mkdtempSync(join(tmpdir(), 'slipway-agent-image-'));
    try {
      const out = join(dir, 'agent.mjs');
      const command = (bundleRun ?? '').replaceAll('/opt/slipway/agent.mjs', out);
      execFileSync('sh', ['-c', command], { cwd: ROOT, stdio: 'pipe' });
      const bundle = readFileSync(out, 'utf8');
      // Only node builtins are left to import: nothing needs node_modules in the final stage.
      const imports = [...bundle.matchAll(/\bfrom\s*"([^"]+)"|\brequire\("([^"]+)"\)/g)].map(
        (m) => m[1] ?? m[2] ?? '',
      );
      expect(imports.length).toBeGreaterThan(0);
      for (const name of imports) expect(name).toMatch(/^(node:)?[a-z][a-z0-9_/]*$/);
      execFileSync(process.execPath, ['--check', out]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("has python3 (python template) and declares /app and /tmp, the pod spec's emptyDirs", () => {
    expect(args(last, 'RUN').join(' ')).toMatch(/apt-get install[^&]*\bpython3\b/);
    expect(execForm(args(last, 'VOLUME')[0])).toEqual(['/app', '/tmp']);
  });
});
