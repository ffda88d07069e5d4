import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { basename, dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** One built file of the dashboard, kept in memory with its gzip form. */
export interface DashboardAsset {
  body: Buffer;
  gzip: Buffer;
  contentType: string;
}

export interface DashboardBundle {
  /** The page at `/`; it names its assets by content hash. */
  index: DashboardAsset;
  /** By file name under `/assets/`, e.g. `app-3F2KQ.js`. */
  assets: Map<string, DashboardAsset>;
}

/**
 * Builds web/ (TypeScript + Preact) with esbuild into memory when the server starts, so the two
 * README commands (`npm ci`, `npm start`) need no build step and nothing built is kept in git.
 * One build per process: every server of a test run shares it.
 */
export function dashboardBundle(): Promise<DashboardBundle> {
  built ??= buildDashboard().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}

let built: Promise<DashboardBundle> | undefined;

async function buildDashboard(): Promise<DashboardBundle> {
  // This file is src/http/dashboard-build.ts; web/ sits beside src/.
  const web = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');
  const result = await build({
    entryPoints: { app: join(web, 'src', 'main.tsx') },
    absWorkingDir: web,
    bundle: true,
    splitting: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: join(web, 'out'),
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Licence notices of the bundled packages stay, at the end of the file.
    legalComments: 'eof',
  });
  const assets = new Map<string, DashboardAsset>();
  for (const file of result.outputFiles) {
    assets.set(basename(file.path), asset(Buffer.from(file.contents), typeOf(file.path)));
  }
  const entry = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint);
  if (!entry) throw new Error('dashboard build: no entry output');
  const script = basename(entry[0]);
  const style = entry[1].cssBundle ? basename(entry[1].cssBundle) : undefined;
  assets.set(FAVICON_NAME, asset(Buffer.from(FAVICON), 'image/svg+xml'));
  const html = indexHtml(script, style);
  return { index: asset(Buffer.from(html), 'text/html; charset=utf-8'), assets };
}

function indexHtml(script: string, style: string | undefined): string {
  const css = style ? `<link rel="stylesheet" href="/assets/${style}">\n` : '';
  const icon = `/assets/${FAVICON_NAME}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Slipway</title>
<link rel="icon" href="${icon}" type="image/svg+xml">
${css}<script type="module" src="/assets/${script}"></script>
</head><body><div id="root"></div>
<noscript>The Slipway dashboard needs JavaScript; the API is documented at /api/docs/.</noscript>
</body></html>
`;
}

/** A constant, so it joins the bundle under its own content hash. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2563eb"/><path d="M3 11h10l-2 2H5z M7 3v7h4z" fill="#fff"/></svg>`;
const FAVICON_NAME = `icon-${createHash('sha256').update(FAVICON).digest('hex').slice(0, 8)}.svg`;

function asset(body: Buffer, contentType: string): DashboardAsset {
  return { body, gzip: gzipSync(body, { level: 9 }), contentType };
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

function typeOf(path: string): string {
  const type = TYPES[extname(path)];
  if (!type) throw new Error(`dashboard build: unexpected output ${basename(path)}`);
  return type;
}
