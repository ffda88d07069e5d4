import { createServer } from 'node:http';

createServer((_req, res) => res.end('corpus esm')).listen(Number(process.env.PORT ?? 3000));
