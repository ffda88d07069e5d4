import { describe, expect, it } from 'vitest';
import { validateMetadata } from '../../src/services/deploy-metadata.js';
import { classify, type Classification } from '../../src/sources/classify.js';
import type { SourceInfo } from '../../src/sources/tarball.js';
import { expectAppError } from './expect-app-error.js';

function source(files: string[], packageJson?: Record<string, unknown>): SourceInfo {
  const info: SourceInfo = { hash: 'sha256:x', files, totalBytes: 0, entryCount: 0 };
  return packageJson ? { ...info, packageJson } : info;
}

function plan(result: Classification) {
  if (!result.ok) throw new Error(`expected a plan, got ${result.reason}: ${result.message}`);
  return { lane: result.lane, template: result.template, entrypoint: result.entrypoint };
}

const meta = (runtime: unknown) => validateMetadata({ name: 'web', runtime });

describe('runtime.build: metadata', () => {
  it('keeps a one-line command as typed', () => {
    const build = 'npx vite build --outDir out';
    expect(meta({ build }).runtime).toEqual({ build });
    expect(meta({ build, lane: 'general' }).runtime).toEqual({ build, lane: 'general' });
    expect(meta({ build: 'x'.repeat(1000) }).runtime?.build).toHaveLength(1000);
  });

  it.each([
    ['an empty command', { build: '' }, 'non-empty'],
    ['a blank command', { build: '   ' }, 'non-empty'],
    ['a command over 1,000 characters', { build: 'x'.repeat(1001) }, '1000'],
    ['a non-string', { build: ['npm', 'run', 'build'] }, 'non-empty'],
    ['a newline', { build: 'npm ci\nrm -rf /' }, 'one line'],
    ['a carriage return', { build: 'make\r' }, 'one line'],
    ['a NUL', { build: 'make\0' }, 'NUL'],
    ['the fast lane', { build: 'make', lane: 'fast' }, 'general lane'],
    ['the fast lane, named first', { lane: 'fast', build: 'make' }, 'general lane'],
  ])('refuses %s as bad_metadata on runtime.build', async (_what, runtime, message) => {
    const error = await expectAppError(() => meta(runtime), 400, 'bad_metadata', message);
    expect(error.details).toEqual({ field: 'runtime.build' });
  });
});

describe('runtime.build: classification', () => {
  const site = source(['index.src.html']);

  it('builds a static project without package.json on the general lane, serving the output', () => {
    const result = classify(site, { template: 'static', build: 'make' });
    expect(plan(result)).toEqual({ lane: 'general', template: 'static', entrypoint: '' });
    expect(result.ok && result.why).toContain('runtime.build');
  });

  it('builds a static site that would otherwise be served as it is', () => {
    const plain = source(['index.html']);
    expect(plan(classify(plain)).lane).toBe('fast');
    expect(plan(classify(plain, { build: 'make' }))).toEqual({
      lane: 'general',
      template: 'static',
      entrypoint: '',
    });
  });

  it('takes a node project with a build command and no server as a static site, like a build script', () => {
    const pkg = source(['package.json', 'src/main.js'], { name: 'x' });
    expect(plan(classify(pkg, { build: 'npx vite build' }))).toEqual({
      lane: 'general',
      template: 'static',
      entrypoint: '',
    });
  });

  it('trusts a node entrypoint the build writes, on the general lane', () => {
    const pkg = source(['package.json', 'src/server.ts'], { name: 'x' });
    const result = classify(pkg, { build: 'npx tsc', entrypoint: 'dist/server.js' });
    expect(plan(result)).toEqual({
      lane: 'general',
      template: 'node',
      entrypoint: 'dist/server.js',
    });
    expect(result.ok && result.why).toContain('after runtime.build');
  });

  it('moves a python app with nothing to install to the general lane', () => {
    const result = classify(source(['app.py']), { build: 'python manage.py collectstatic' });
    expect(plan(result)).toEqual({ lane: 'general', template: 'python', entrypoint: 'app.py' });
    expect(result.ok && result.why).toContain('runtime.build to run');
  });

  it('refuses the fast lane for a build it cannot run there', () => {
    const result = classify(site, { template: 'static', build: 'make', lane: 'fast' });
    expect(result).toMatchObject({ ok: false, reason: 'NoEntrypoint' });
  });
});
