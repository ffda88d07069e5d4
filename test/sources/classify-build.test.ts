import { describe, expect, it } from 'vitest';
import { classify, type Classification } from '../../src/sources/classify.js';
import type { SourceInfo } from '../../src/sources/tarball.js';
import { validateMetadata } from '../../src/services/deploy-metadata.js';
import { expectAppError } from './expect-app-error.js';

function source(
  files: string[],
  extra: { packageJson?: Record<string, unknown>; requirementsTxt?: string } = {},
): SourceInfo {
  return { hash: 'sha256:x', files: [...files].sort(), totalBytes: 0, entryCount: 0, ...extra };
}

function plan(result: Classification) {
  if (!result.ok) throw new Error(`expected a plan, got ${result.reason}: ${result.message}`);
  return { lane: result.lane, template: result.template, entrypoint: result.entrypoint };
}

const VITE = {
  files: ['package.json', 'package-lock.json', 'index.html', 'src/main.jsx', 'vite.config.js'],
  packageJson: { scripts: { dev: 'vite', build: 'vite build' }, dependencies: { react: '18' } },
};

describe('classify: projects with a build step', () => {
  it('takes a node project whose build makes no server as a static site built on the general lane', () => {
    const result = classify(source(VITE.files, { packageJson: VITE.packageJson }));
    // '' = the agent serves the build's output (dist/, build/, out/, public/), never the source.
    expect(plan(result)).toEqual({ lane: 'general', template: 'static', entrypoint: '' });
    expect(result.ok && result.why).toContain('dist/, build/, out/, public/');
  });

  it('builds a static project even when runtime.template says static (the source index.html is not the site)', () => {
    const result = classify(source(VITE.files, { packageJson: VITE.packageJson }), {
      template: 'static',
    });
    expect(plan(result)).toEqual({ lane: 'general', template: 'static', entrypoint: '' });
    const named = classify(source(VITE.files, { packageJson: VITE.packageJson }), {
      template: 'static',
      entrypoint: 'dist/index.html',
    });
    expect(plan(named)).toEqual({ lane: 'general', template: 'static', entrypoint: 'dist' });
  });

  it('runs the server a build writes: main or the start script pointing into dist/', () => {
    const tsc = { scripts: { build: 'tsc' }, main: 'dist/server.js' };
    expect(plan(classify(source(['package.json', 'src/server.ts'], { packageJson: tsc })))).toEqual(
      {
        lane: 'general',
        template: 'node',
        entrypoint: 'dist/server.js',
      },
    );
    const start = { scripts: { build: 'tsc', start: 'node build/index.js' }, main: 'index.js' };
    expect(
      plan(classify(source(['package.json', 'src/index.ts'], { packageJson: start }))).entrypoint,
    ).toBe('build/index.js');
    // Without a build nothing will write it: still NoEntrypoint.
    const unbuilt = classify(source(['package.json'], { packageJson: { main: 'dist/server.js' } }));
    expect(unbuilt).toMatchObject({ ok: false, reason: 'NoEntrypoint' });
  });

  it('keeps a server at the root when the build is for its assets', () => {
    const pkg = { scripts: { build: 'vite build' }, dependencies: { express: '4' } };
    expect(
      plan(classify(source(['package.json', 'server.js', 'index.html'], { packageJson: pkg }))),
    ).toEqual({ lane: 'general', template: 'node', entrypoint: 'server.js' });
  });
});

describe('classify: the gaps of issue 10', () => {
  it('takes a lone server.js (no package.json) as a node app on the fast lane', () => {
    expect(plan(classify(source(['server.js'])))).toEqual({
      lane: 'fast',
      template: 'node',
      entrypoint: 'server.js',
    });
    expect(plan(classify(source(['server.mjs']))).entrypoint).toBe('server.mjs');
    // index.js or app.js beside index.html is browser code: still a static site.
    expect(plan(classify(source(['index.html', 'app.js']))).template).toBe('static');
  });

  it('keeps an empty or comment-only requirements.txt on the fast lane', () => {
    for (const text of ['', '\n\n', '# nothing yet\n  # really\n']) {
      const result = classify(source(['app.py', 'requirements.txt'], { requirementsTxt: text }));
      expect(plan(result).lane).toBe('fast');
      expect(result.ok && result.why).toContain('requirements.txt lists no packages');
    }
    const listed = source(['app.py', 'requirements.txt'], {
      requirementsTxt: '# web\nflask==3.0.3\n',
    });
    expect(plan(classify(listed)).lane).toBe('general');
  });

  it('refuses an unknown runtime.template at upload (400 bad_metadata), naming the templates', async () => {
    await expectAppError(
      () => validateMetadata({ name: 'x', runtime: { template: 'nodejs' } }),
      400,
      'bad_metadata',
      /runtime\.template must be one of node, python, static/,
    );
    expect(validateMetadata({ name: 'x', runtime: { template: 'python' } }).runtime).toEqual({
      template: 'python',
    });
  });
});
