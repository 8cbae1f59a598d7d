import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { jsonApp, serve } from '../lib/express-server.ts';

// The reference issue 8 names for unique payloads: "a plain `addBulk` per request reaches about
// 0.3x" of the bare endpoint. The bare endpoint's parser settings, then one BullMQ job per alert
// (or per Event) with the alert's fingerprint (the Event's uid) as its id, all of a request's
// jobs in one `Queue.addBulk`, and 202 with their ids. No validation, triage, coalescing or
// memory of stored keys: what the receiver does beyond this is what the ratio to it shows, on
// whatever machine the run is on (the ratio to the bare endpoint moves with the cost of a
// system call; this one is measured beside it). REDIS_URL, QUEUE_PREFIX from the parent.

const connection = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const queue = new Queue('addbulk', { connection, prefix: process.env['QUEUE_PREFIX'] ?? 'bench' });
await queue.waitUntilReady();

interface Incident {
  id: string;
  data: unknown;
}

/** An Alertmanager body's alerts by fingerprint, or a Kubernetes Event by its uid. */
function incidents(body: unknown): Incident[] {
  if (typeof body !== 'object' || body === null) return [];
  const b = body as { alerts?: unknown; metadata?: { uid?: unknown } };
  if (Array.isArray(b.alerts)) {
    return b.alerts.flatMap((a: unknown) => {
      const fp = (a as { fingerprint?: unknown } | null)?.fingerprint;
      return typeof fp === 'string' ? [{ id: `alert-${fp}`, data: a }] : [];
    });
  }
  const uid = b.metadata?.uid;
  return typeof uid === 'string' ? [{ id: `event-${uid}`, data: body }] : [];
}

const app = jsonApp();
app.post('/{*path}', async (req, res) => {
  const found = incidents(req.body);
  try {
    const jobs = await queue.addBulk(found.map((i) => ({ name: 'incident', data: i.data, opts: { jobId: i.id } })));
    res.status(202).json({ accepted: jobs.map((j) => j.id), ignored: [] });
  } catch {
    res.status(503).json({ error: 'jobs could not be stored' });
  }
});
serve(app, () => queue.close());
