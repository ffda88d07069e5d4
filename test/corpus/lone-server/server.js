// CommonJS on purpose, as many deployed apps are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const http = require('node:http');

http.createServer((_req, res) => res.end('corpus lone server.js')).listen(process.env.PORT || 3000);
