import { jsonApp, serve } from '../lib/express-server.ts';

// The baseline: express with the same JSON body parser settings as the receiver, answering 202
// with a small JSON body. Everything the receiver does beyond this is what the ratio measures.

const app = jsonApp();
app.post('/{*path}', (req, res) => {
  res.status(202).json({ accepted: Array.isArray(req.body?.alerts) ? req.body.alerts.length : 1, ignored: [] });
});
serve(app);
