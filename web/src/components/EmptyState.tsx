/** What to do when there is no app yet: the browser, the README's curl line, the CLI and MCP. */
export function EmptyState() {
  const base = location.origin;
  const curl = [
    'tar -C examples/node -czf /tmp/app.tgz .',
    `curl -H "Authorization: Bearer $KEY" \\`,
    `  -F 'metadata={"name":"hello"}' \\`,
    `  -F 'source=@/tmp/app.tgz;type=application/gzip' \\`,
    `  ${base}/v1/deploy`,
  ].join('\n');
  const cli = [
    `npx slipway login --url ${base} --token "$KEY"`,
    'npx slipway deploy examples/node --name hello',
  ].join('\n');
  return (
    <section class="empty" aria-labelledby="empty-title">
      <h2 id="empty-title">No apps yet</h2>
      <p>
        <a class="button primary" href="#/deploy">
          Deploy from the browser
        </a>{' '}
        by dropping a folder or a <code>.tar.gz</code>, or use one of these:
      </p>
      <h3>curl</h3>
      <pre tabIndex={0}>{curl}</pre>
      <h3>CLI</h3>
      <pre tabIndex={0}>{cli}</pre>
      <h3>MCP</h3>
      <p>
        Point an MCP client (streamable HTTP) at <code>{base}/mcp</code> with your bearer token; its
        deploy tool takes a map of files.
      </p>
    </section>
  );
}
