import { announce } from '../lib/child.ts';
import express from 'express';

// The baseline: express with the same JSON body parser settings as the receiver, answering 202
// with a small JSON body. Everything the receiver does beyond this is what the ratio measures.

const app = express();
app.disable('x-powered-by');
app.use(express.json({ limit: 1024 * 1024, type: () => true, strict: false }));
app.post('/{*path}', (req, res) => {
  res.status(202).json({ accepted: Array.isArray(req.body?.alerts) ? req.body.alerts.length : 1, ignored: [] });
});
const server = app.listen(0, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  announce(`READY http://127.0.0.1:${addr.port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
