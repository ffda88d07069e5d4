import { createServer } from 'node:http';

// Slipway tells the app where to listen; 3000 only for running it by hand.
const port = Number(process.env.PORT ?? 3000);

const server = createServer((request, response) => {
  if (request.url === '/env') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ GREETING: process.env.GREETING ?? null }));
    return;
  }
  if (request.url === '/') {
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    response.end('hello from node\n');
    return;
  }
  response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
  response.end('not found\n');
});

server.listen(port, () => console.log(`listening on port ${port}`));
