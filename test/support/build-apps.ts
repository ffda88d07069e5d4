/**
 * A general-lane node app whose build is slow and chatty without any network: no dependencies
 * (`npm install` fetches nothing), and a `build` script that prints a numbered line on a timer,
 * then writes what the server answers. Tests watch a deploy happen with it (issue 29).
 */
export const BUILD_LINE = /^build step \d+ of \d+$/;

export function slowBuildFiles(
  body: string,
  opts: { lines?: number; everyMs?: number } = {},
): Record<string, string> {
  const lines = opts.lines ?? 12;
  const everyMs = opts.everyMs ?? 400;
  const build = `
let i = 0;
const timer = setInterval(() => {
  i += 1;
  console.log('build step ' + i + ' of ${lines}');
  if (i < ${lines}) return;
  clearInterval(timer);
  require('node:fs').writeFileSync('built.txt', ${JSON.stringify(body)});
}, ${everyMs});
`;
  const server = `
const text = require('node:fs').readFileSync(__dirname + '/built.txt', 'utf8');
require('node:http').createServer((req, res) => res.end(text)).listen(process.env.PORT);
`;
  return {
    'package.json': JSON.stringify({
      name: 'slow-build',
      version: '1.0.0',
      main: 'server.js',
      scripts: { build: 'node build.js' },
    }),
    'build.js': build,
    'server.js': server,
  };
}

/** A fast-lane node app answering `body`: the live version a cancelled deploy must leave alone. */
export function quickFiles(body: string): Record<string, string> {
  return {
    'package.json': JSON.stringify({ name: 'quick', version: '1.0.0', main: 'server.js' }),
    'server.js': `require('node:http').createServer((q, s) => s.end(${JSON.stringify(body)})).listen(process.env.PORT);`,
  };
}
