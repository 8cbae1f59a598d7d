import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { bearerAuth } from './auth.ts';
import { errorHandler } from './errors.ts';
import { healthRoutes } from './routes/health.ts';
import { jobRoutes } from './routes/jobs.ts';
import { webhookRoutes, type WebhookDeps } from './routes/webhooks.ts';
import type { JobReader } from '../queues/job-reader.ts';
import type { KubeWatchesState } from '../kube/kube-watches.ts';

export interface AppDeps extends WebhookDeps {
  redis: Redis;
  prefix: string;
  tokens: readonly string[];
  bodyLimit: number;
  reader: JobReader;
  /** The Kubernetes watches' state, when KUBE_WATCH is on. */
  kubeState?: () => KubeWatchesState | undefined;
}

const SOURCE_OF: Record<string, string> = { '/v1/alertmanager': 'alertmanager', '/v1/events': 'events', '/v1/npd': 'npd' };

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(healthRoutes(deps.redis, deps.prefix, deps.metrics.registry, deps.kubeState));
  // Auth before the body is read: an unauthenticated sender does not get us to parse 1 MiB.
  app.use('/v1', bearerAuth(deps.tokens, (req) => {
    const source = SOURCE_OF[req.originalUrl.split('?')[0] ?? ''];
    if (source) deps.metrics.webhooks.inc({ source, outcome: 'unauthorized' });
  }));
  // Senders differ in Content-Type (some send none); every body here is JSON.
  app.use('/v1', express.json({ limit: deps.bodyLimit, type: () => true, strict: false }));
  app.use(webhookRoutes(deps));
  app.use(jobRoutes(deps.reader));
  app.use((_req, res) => res.status(404).json({ error: 'no such route' }));
  app.use(errorHandler(deps.log, (path, outcome) => {
    const source = SOURCE_OF[path];
    if (source) deps.metrics.webhooks.inc({ source, outcome });
  }));
  return app;
}
