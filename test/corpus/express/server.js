// CommonJS on purpose, as many deployed apps are.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const express = require('express');

const app = express();
app.get('/', (_req, res) => res.type('text/plain').send('corpus express'));
app.listen(process.env.PORT || 3000);
