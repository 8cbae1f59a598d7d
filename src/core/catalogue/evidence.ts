import { z } from '../zod.ts';

// Evidence is what made us act: the alert or event as received, bounded in size so one huge
// annotation cannot bloat Redis. It is shown in every job (GET /v1/jobs/:id) and never holds
// secrets: sources copy only the payload the sender chose to publish.

const EVIDENCE_MAX_BYTES = 8 * 1024;

/**
 * `k8s-event`: an Event posted to /v1/events; `k8s-watch`: the receiver's Node watch (and the
 * reconcile's reading of Node status), the cluster's own word; `k8s-watch-event`: an Event the
 * receiver's own watch (or the reconcile) read, which anyone who may create Events wrote, so it is
 * corroborated as a posted one is; `agent`: a node agent's own check (a placeholder's disk came
 * back, an interrupted cleanup to finish); `node-healthcheck`: a VolumeMedicRemediation object the
 * receiver's watch read (NodeHealthCheck, or whoever may create those objects, asked for a cleanup).
 */
export const SignalSource = z.enum(['alertmanager', 'k8s-event', 'npd', 'k8s-watch', 'k8s-watch-event', 'api', 'agent', 'node-healthcheck']);
export type SignalSource = z.infer<typeof SignalSource>;

/**
 * The evidence as a job carries it. A node agent checks a job's evidence against its own
 * catalogue, and agents of the release before this one know no `k8s-watch-event`: during a rolling
 * upgrade they would refuse every job a watched Event made. So a job names such evidence
 * `k8s-watch`, as that release did; triage has corroborated the Event by then, which is all the
 * distinction is for. Once no agent of that release runs, jobs can carry the source as it is.
 */
export const jobEvidence = (e: Evidence): Evidence => (e.source === 'k8s-watch-event' ? { ...e, source: 'k8s-watch' } : e);

export const Evidence = z.lazy(() =>
  z.object({
    source: SignalSource,
    /** One line a human can read in a table: "KubeNodeNotReady resolved for worker-1". */
    summary: z.string().check(z.maxLength(500)),
    /** The raw object, or a truncated JSON string of it when it was larger than EVIDENCE_MAX_BYTES. */
    raw: z.unknown(),
  }),
);
export type Evidence = z.infer<typeof Evidence>;

/** Deeper than this, a value in captured evidence is replaced by a note (a sender's 5,000-level field must not crash us). */
export const EVIDENCE_MAX_DEPTH = 32;

export function boundedRaw(raw: unknown): unknown {
  let json: string;
  try {
    json = JSON.stringify(raw) ?? 'null';
  } catch (err) {
    // A value nested deeper than the stack allows (RangeError): keep its top, note the rest.
    if (!(err instanceof RangeError)) throw err;
    return boundedRaw(pruned(raw, EVIDENCE_MAX_DEPTH));
  }
  if (json.length <= EVIDENCE_MAX_BYTES) return raw;
  return { truncated: true, bytes: json.length, head: json.slice(0, EVIDENCE_MAX_BYTES) };
}

/** A copy of `v` down to `depth` levels; anything deeper becomes a string saying so. */
function pruned(v: unknown, depth: number): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (depth <= 0) return `[nested deeper than ${EVIDENCE_MAX_DEPTH} levels: left out]`;
  if (Array.isArray(v)) return v.map((x) => pruned(x, depth - 1));
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, pruned(x, depth - 1)]));
}
