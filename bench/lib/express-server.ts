import express, { type Express } from 'express';
import type { AddressInfo } from 'node:net';
import { announce } from '../../test/support/child.ts';

// What the bench's plain servers (servers/bare.ts, servers/addbulk.ts) share, so their ratios
// compare like with like: express with the default `express.json` settings the receiver's
// fallback parser uses (1 MiB, any content type, not strict), on a free loopback port.

/** An express app whose every body is parsed as JSON, as the bare endpoint's. */
export function jsonApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: 1024 * 1024, type: () => true, strict: false }));
  return app;
}

/** Listens on a free loopback port, announces `READY <url>`, and on SIGTERM closes, then `cleanup`. */
export function serve(app: Express, cleanup: () => Promise<void> = async () => {}): void {
  const server = app.listen(0, '127.0.0.1', () => {
    announce(`READY http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
  process.on('SIGTERM', () => server.close(() => void cleanup().then(() => process.exit(0))));
}
