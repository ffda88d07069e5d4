// CommonJS on purpose, as many deployed apps are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const http = require('node:http');

// Hard-coded, as tutorials write it: Slipway finds the port and routes to it.
http
  .createServer((_req, res) => res.end('corpus port 3000'))
  .listen(3000, () => {
    console.log('listening on http://localhost:3000');
  });
