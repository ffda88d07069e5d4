import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { classify, type Classification } from '../../src/sources/classify.js';
import { inspectTarball, type SourceInfo } from '../../src/sources/tarball.js';
import { tarGzDir } from '../support/tarball.js';

function source(files: string[], packageJson?: Record<string, unknown>): SourceInfo {
  const info: SourceInfo = {
    hash: 'sha256:x',
    files: [...files].sort(),
    totalBytes: 0,
    entryCount: files.length,
  };
  if (packageJson) info.packageJson = packageJson;
  return info;
}

function ok(result: Classification) {
  if (!result.ok) throw new Error(`expected a plan, got ${result.reason}: ${result.message}`);
  return { lane: result.lane, template: result.template, entrypoint: result.entrypoint };
}

function failure(result: Classification) {
  if (result.ok) throw new Error(`expected a failure, got ${result.template} ${result.entrypoint}`);
  return result;
}

describe('classify: node', () => {
  it('takes package.json main first', () => {
    const info = source(['package.json', 'lib/run.js', 'server.js'], {
      main: './lib/run.js',
      scripts: { start: 'node server.js' },
    });
    expect(ok(classify(info))).toEqual({
      lane: 'fast',
      template: 'node',
      entrypoint: 'lib/run.js',
    });
  });

  it('resolves main like node does (extension, index.js)', () => {
    expect(ok(classify(source(['package.json', 'srv.js'], { main: 'srv' }))).entrypoint).toBe(
      'srv.js',
    );
    expect(ok(classify(source(['package.json', 'app/index.js'], { main: 'app' }))).entrypoint).toBe(
      'app/index.js',
    );
  });

  it('falls back from a missing main to "start": "node <file>"', () => {
    const info = source(['package.json', 'bin/www.js'], {
      main: 'index.js',
      scripts: { start: 'node ./bin/www.js' },
    });
    expect(ok(classify(info)).entrypoint).toBe('bin/www.js');
  });

  it('ignores a start script that is not plain node <file>', () => {
    const info = source(['package.json', 'server.ts', 'index.js'], {
      scripts: { start: 'tsx server.ts' },
    });
    expect(ok(classify(info)).entrypoint).toBe('index.js');
  });

  it('tries server.js, index.js, app.js, main.js in that order', () => {
    expect(ok(classify(source(['package.json', 'main.js', 'app.js']))).entrypoint).toBe('app.js');
    expect(ok(classify(source(['package.json', 'index.js', 'server.js']))).entrypoint).toBe(
      'server.js',
    );
    expect(ok(classify(source(['package.json', 'main.js']))).entrypoint).toBe('main.js');
  });

  it('runs vendored dependencies on the fast lane', () => {
    const info = source(
      [
        'package.json',
        'server.js',
        'node_modules/express/package.json',
        'node_modules/@scope/lib/package.json',
      ],
      {
        dependencies: { express: '^4', '@scope/lib': '1' },
      },
    );
    expect(ok(classify(info)).lane).toBe('fast');
  });

  it('sends unvendored dependencies, install scripts and builds to the general lane', () => {
    const base = ['package.json', 'server.js'];
    expect(ok(classify(source(base, { dependencies: { express: '^4' } }))).lane).toBe('general');
    const partly = source([...base, 'node_modules/a/package.json'], {
      dependencies: { a: '1', b: '1' },
    });
    const result = classify(partly);
    expect(ok(result).lane).toBe('general');
    expect(result.ok && result.why).toContain('not vendored in node_modules/: b');
    for (const script of ['build', 'install', 'postinstall', 'preinstall']) {
      expect(ok(classify(source(base, { scripts: { [script]: 'x' } }))).lane, script).toBe(
        'general',
      );
    }
  });

  it('fails NoEntrypoint naming what to add, and a missing main', () => {
    const result = failure(classify(source(['package.json', 'lib/util.js'], { main: 'gone.js' })));
    expect(result.reason).toBe('NoEntrypoint');
    expect(result.message).toContain('"main" names "gone.js", which is not in the source');
    expect(result.message).toContain('server.js, index.js, app.js, main.js');
  });

  it('suggests another template that would work', () => {
    const result = failure(
      classify(source(['package.json', 'dist/index.html'], { scripts: { start: 'vite preview' } })),
    );
    expect(result.message).toContain('set runtime.template to "static"');
  });
});

describe('classify: python', () => {
  it('finds app.py, main.py, server.py in that order', () => {
    expect(ok(classify(source(['server.py', 'main.py'])))).toEqual({
      lane: 'fast',
      template: 'python',
      entrypoint: 'main.py',
    });
    expect(ok(classify(source(['app.py', 'server.py']))).entrypoint).toBe('app.py');
  });

  it('takes the only root script when no conventional name exists', () => {
    expect(ok(classify(source(['hello.py', 'setup.py', 'pkg/x.py']))).entrypoint).toBe('hello.py');
    expect(failure(classify(source(['a.py', 'b.py']))).reason).toBe('NoEntrypoint');
  });

  it('needs the general lane for requirements without vendored packages', () => {
    expect(ok(classify(source(['app.py', 'requirements.txt']))).lane).toBe('general');
    expect(ok(classify(source(['app.py', 'pyproject.toml']))).lane).toBe('general');
    expect(
      ok(classify(source(['app.py', 'requirements.txt', 'vendor/flask/__init__.py']))).lane,
    ).toBe('fast');
  });

  it('fails NoEntrypoint for requirements alone', () => {
    const result = failure(classify(source(['requirements.txt', 'pkg/mod.py'])));
    expect(result.reason).toBe('NoEntrypoint');
    expect(result.message).toContain('app.py, main.py, server.py');
    expect(result.message).toContain('$PORT');
  });
});

describe('classify: static', () => {
  it('serves the root, public/, dist/ or build/ in that order', () => {
    expect(ok(classify(source(['index.html', 'dist/index.html'])))).toEqual({
      lane: 'fast',
      template: 'static',
      entrypoint: '.',
    });
    expect(ok(classify(source(['public/index.html', 'dist/index.html']))).entrypoint).toBe(
      'public',
    );
    expect(ok(classify(source(['dist/index.html', 'build/index.html']))).entrypoint).toBe('dist');
    expect(ok(classify(source(['build/index.html', 'build/app.css']))).entrypoint).toBe('build');
  });

  it('does not look for index.html anywhere else', () => {
    expect(failure(classify(source(['site/index.html']))).reason).toBe('NoEntrypoint');
  });
});

describe('classify: precedence and overrides', () => {
  it('prefers node over python over static', () => {
    expect(
      ok(classify(source(['package.json', 'server.js', 'app.py', 'index.html']))).template,
    ).toBe('node');
    expect(ok(classify(source(['app.py', 'index.html']))).template).toBe('python');
  });

  it('honours runtime.template, runtime.entrypoint and runtime.lane', () => {
    const files = ['package.json', 'server.js', 'app.py', 'public/index.html'];
    expect(ok(classify(source(files), { template: 'static' }))).toEqual({
      lane: 'fast',
      template: 'static',
      entrypoint: 'public',
    });
    expect(ok(classify(source(files), { template: 'python' })).entrypoint).toBe('app.py');
    expect(ok(classify(source(files), { entrypoint: './app.py' }))).toEqual({
      lane: 'fast',
      template: 'python',
      entrypoint: 'app.py',
    });
    expect(
      ok(classify(source(files), { template: 'static', entrypoint: 'public/index.html' }))
        .entrypoint,
    ).toBe('public');
    const forced = classify(source(files, { dependencies: { x: '1' } }), { lane: 'fast' });
    expect(ok(forced).lane).toBe('fast');
    expect(forced.ok && forced.why).toContain('lane set by runtime.lane');
    expect(ok(classify(source(files), { lane: 'general' })).lane).toBe('general');
  });

  it('fails UnknownTemplate for a template Slipway does not have', () => {
    const result = failure(classify(source(['index.html']), { template: 'ruby' }));
    expect(result).toMatchObject({ reason: 'UnknownTemplate' });
    expect(result.message).toContain('"ruby"');
    expect(result.message).toContain('node, python, static');
  });

  it('fails UnknownLane for a lane that does not exist', () => {
    expect(failure(classify(source(['index.html']), { lane: 'slow' })).reason).toBe('UnknownLane');
  });

  it('fails NoEntrypoint naming an entrypoint that is not in the source', () => {
    for (const [override, files] of [
      [{ entrypoint: 'missing.js' }, ['package.json', 'server.js']],
      [{ entrypoint: 'missing.py' }, ['app.py']],
      [{ template: 'node', entrypoint: 'nope' }, ['server.js']],
    ] as const) {
      const result = failure(classify(source([...files]), override));
      expect(result.reason).toBe('NoEntrypoint');
      expect(result.message).toContain(
        `runtime.entrypoint ${JSON.stringify(override.entrypoint)} is not a file in the source`,
      );
    }
    const site = failure(
      classify(source(['index.html']), { template: 'static', entrypoint: 'www' }),
    );
    expect(site.message).toContain('"www" has no index.html');
  });

  it('fails TemplateUnavailable and LaneUnavailable against what this Slipway offers', () => {
    const info = source(['package.json', 'server.js'], { dependencies: { x: '1' } });
    const template = failure(classify(source(['app.py']), {}, { templates: ['node', 'static'] }));
    expect(template.reason).toBe('TemplateUnavailable');
    const lane = failure(classify(info, {}, { lanes: ['fast'] }));
    expect(lane.reason).toBe('LaneUnavailable');
    expect(lane.message).toContain('vendor the dependencies');
    expect(ok(classify(info, {}, { lanes: ['fast', 'general'] })).lane).toBe('general');
  });

  it('says what Slipway looks for when nothing is recognisable', () => {
    const result = failure(classify(source(['README.md', 'notes.txt'])));
    expect(result.reason).toBe('NoEntrypoint');
    expect(result.message).toMatch(/package\.json.*requirements\.txt.*index\.html/);
    const nested = failure(classify(source(['myapp/package.json', 'myapp/server.js'])));
    expect(nested.message).toContain('All files are inside "myapp/"');
    expect(nested.message).toContain('tar -czf app.tar.gz -C myapp .');
  });
});

describe('classify: the examples', () => {
  const examples = fileURLToPath(new URL('../../examples/', import.meta.url));

  it.each([
    ['node', { lane: 'fast', template: 'node', entrypoint: 'server.js' }],
    ['python', { lane: 'fast', template: 'python', entrypoint: 'app.py' }],
    ['static', { lane: 'fast', template: 'static', entrypoint: '.' }],
  ])('classifies examples/%s', async (name, expected) => {
    const info = await inspectTarball(await tarGzDir(`${examples}${name}`));
    expect(ok(classify(info))).toEqual(expected);
  });
});
