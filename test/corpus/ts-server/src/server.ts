import { createServer } from 'node:http';

const greeting: string = ['corpus', 'typescript', 'built'].join(' ');
createServer((_req, res) => res.end(greeting)).listen(Number(process.env.PORT ?? 3000));
