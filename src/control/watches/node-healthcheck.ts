import type { KubernetesObject } from '@kubernetes/client-node';
import { boundedRaw } from '../../core/catalogue/evidence.ts';
import { isNodeName } from '../../core/catalogue/names.ts';
import { nodeQueueName } from '../../core/catalogue/queues.ts';
import type { JobReads, JobState } from '../../core/jobs/job-store.ts';
import type { Ignored, NodeRemediationRequestedSignal } from '../../core/signals/index.ts';
import { z } from '../../core/zod.ts';
import type { JobWithdrawal } from '../../adapters/jobstore/job-withdrawal.ts';
import { REMEDIATIONS_PATH, type RemediationRef, type RemediationsApi } from '../../adapters/kube/volume-medic-remediations.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { type Sleep, SupervisedInformer, type SupervisedInformerOptions } from '../../adapters/kube/supervised-informer.ts';
import { ingest, type IngestDeps } from '../ingest/ingest.ts';
import { remediationJobKey } from '../triage/node-healthcheck.ts';
import { isFinal, type JobView, remediationStatus, type RemediationStatus, statusChanged } from './remediation-status.ts';

// NodeHealthCheck's escalation step (docs/node-healthcheck.md): the receiver watches
// VolumeMedicRemediation objects, makes each one's residual-multipath-cleanup job through triage
// and ingest (sealed like every job, one per object uid), and keeps the object's status the job's
// (remediation-status.ts), reading the store every resync period while it runs. Deleting the object,
// or NHC's timeout annotation, withdraws a job that has not started (job-withdrawal.ts); a running
// attempt ends as it would, and no further attempt of it is run when it fails over into a retry.

/** NHC's name for the node, on every object it makes (github.com/medik8s/common pkg/annotations). */
const NODE_NAME_ANNOTATION = 'remediation.medik8s.io/node-name';
/** NHC's word that it stopped waiting and went on to its next remediation. */
const TIMED_OUT_ANNOTATION = 'remediation.medik8s.io/nhc-timed-out';
const NOT_STARTED: ReadonlySet<JobState | 'unknown'> = new Set(['waiting', 'delayed', 'prioritized', 'paused', 'waiting-children']);

export interface RemediationWatchOptions {
  api: RemediationsApi;
  jobs: Pick<JobReads, 'state' | 'get'>;
  withdrawal: JobWithdrawal;
  /** How often running jobs are read again for their objects' status. Default 15 s. */
  resyncMs?: number;
}

const RemediationObject = z.object({
  metadata: z.object({
    name: z.string(),
    namespace: z.string(),
    uid: z.string(),
    annotations: z.optional(z.nullable(z.record(z.string(), z.string()))),
    deletionTimestamp: z.optional(z.nullable(z.unknown())),
    ownerReferences: z.optional(z.nullable(z.array(z.object({ kind: z.optional(z.string()), name: z.optional(z.string()) })))),
  }),
  spec: z.optional(z.nullable(z.unknown())),
  status: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
});
type RemediationObject = z.infer<typeof RemediationObject>;

/** The object as the watch keeps it: where its job goes and what its status says now. */
interface Tracked {
  ref: RemediationRef;
  node: string;
  key: string;
  queue: string;
  timedOut: boolean;
  deleting: boolean;
  status: Partial<RemediationStatus> | undefined;
  raw: RemediationObject;
}

function track(obj: unknown): Tracked | undefined {
  const p = RemediationObject.safeParse(obj);
  if (!p.success) return undefined;
  const { metadata: m } = p.data;
  // NHC names the object after the node, or (a template that supports several) generates the name
  // and says the node in the annotation; it sets the annotation either way.
  const node = m.annotations?.[NODE_NAME_ANNOTATION] || m.name;
  return {
    ref: { namespace: m.namespace, name: m.name, uid: m.uid },
    node,
    key: remediationJobKey(m.uid),
    queue: isNodeName(node) ? nodeQueueName(node) : '',
    timedOut: Boolean(m.annotations?.[TIMED_OUT_ANNOTATION]),
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    status: (p.data.status ?? undefined) as Partial<RemediationStatus> | undefined,
    raw: p.data,
  };
}

function signalOf(t: Tracked): NodeRemediationRequestedSignal {
  const owner = t.raw.metadata.ownerReferences?.find((o) => o.kind === 'NodeHealthCheck')?.name;
  const { name, namespace, uid, annotations, ownerReferences } = t.raw.metadata;
  return {
    kind: 'node-remediation-requested',
    version: 1,
    node: t.node,
    remediation: t.ref,
    identity: ['nhc', t.ref.uid],
    evidence: {
      source: 'node-healthcheck',
      summary: `VolumeMedicRemediation ${namespace}/${name}${owner ? ` of NodeHealthCheck ${owner}` : ''} asks for node ${t.node}'s storage cleanup`.slice(
        0,
        500,
      ),
      raw: boundedRaw({ kind: 'VolumeMedicRemediation', metadata: { name, namespace, uid, annotations, ownerReferences }, spec: t.raw.spec }),
    },
  };
}

/** Why an object makes no job, as a condition reason (CamelCase, as metav1.Condition wants). */
const reasonOf = (i: Ignored): string =>
  i.reason === 'node-status-disagrees' ? 'NodeNotFound' : i.reason === 'invalid-node-name' ? 'InvalidNodeName' : 'NotAccepted';

interface RemediationSyncDeps {
  api: Pick<RemediationsApi, 'writeStatus'>;
  jobs: Pick<JobReads, 'state' | 'get'>;
  withdrawal: JobWithdrawal;
  ingest: IngestDeps;
  now: () => number;
  log?: Logger | undefined;
  onIgnored?: ((ignored: readonly Ignored[]) => void) | undefined;
}

/** The objects seen and their jobs; every method catches its own failures (a later resync tries again). */
class RemediationSync {
  readonly #d: RemediationSyncDeps;
  readonly #known = new Map<string, Tracked>();
  /** Job key -> queue, of deleted objects whose job was running: withdrawn if it goes back to waiting (a retry). */
  readonly #withdrawing = new Map<string, string>();
  /** The sync under way per object uid, the next one chained behind it. */
  readonly #syncing = new Map<string, Promise<void>>();

  constructor(deps: RemediationSyncDeps) {
    this.#d = deps;
  }

  async observe(obj: unknown): Promise<void> {
    const t = track(obj);
    if (!t) return void this.#d.log?.warn({ obj: (obj as KubernetesObject)?.metadata?.name }, 'VolumeMedicRemediation not understood; ignored');
    if (t.deleting) return this.removed(obj);
    this.#known.set(t.ref.uid, t);
    await this.#guarded(t, (now) => this.#sync(now));
  }

  async removed(obj: unknown): Promise<void> {
    const t = track(obj);
    if (!t) return;
    this.#known.delete(t.ref.uid);
    if (!t.queue) return;
    await this.#guarded(t, () => this.#withdraw(t.key, t.queue, `VolumeMedicRemediation ${t.ref.namespace}/${t.ref.name} deleted`));
  }

  /** Every object whose job has not finished, and every withdrawal still waiting for its job to stop. */
  async resync(): Promise<void> {
    for (const t of [...this.#known.values()]) if (!isFinal(t.status)) await this.#guarded(t, (now) => this.#sync(now));
    for (const [key, queue] of [...this.#withdrawing]) {
      await this.#withdraw(key, queue, 'retry of a deleted object').catch((err: Error) => this.#d.log?.warn({ key, err: err.message }, 'withdrawal failed'));
    }
  }

  /**
   * One object's syncs one after the other: the watch's event and the resync loop would otherwise
   * race on the same job (one withdraws it, the other finds it gone and writes that status first,
   * and the first's write then conflicts and is dropped). Each runs on the newest copy of the
   * object seen by the time it runs (an event may have come while it waited).
   */
  async #guarded(t: Tracked, fn: (newest: Tracked) => Promise<void>): Promise<void> {
    const uid = t.ref.uid;
    const newest = (): Tracked => this.#known.get(uid) ?? t;
    const run = (this.#syncing.get(uid) ?? Promise.resolve())
      .then(() => fn(newest()))
      .catch((err: unknown) => {
        this.#d.log?.warn(
          { remediation: `${t.ref.namespace}/${t.ref.name}`, err: (err as Error).message },
          'VolumeMedicRemediation not synced; the next resync tries again',
        );
      });
    this.#syncing.set(uid, run);
    await run;
    if (this.#syncing.get(uid) === run) this.#syncing.delete(uid);
  }

  async #withdraw(key: string, queue: string, why: string): Promise<void> {
    const w = await this.#d.withdrawal.withdraw(queue, key);
    if (w === 'started') this.#withdrawing.set(key, queue);
    else this.#withdrawing.delete(key);
    if (w !== 'absent')
      this.#d.log?.info(
        { key, queue, withdrawal: w },
        `${why}: its job ${w === 'removed' ? 'is withdrawn' : w === 'started' ? 'runs to its end' : 'had finished'}`,
      );
  }

  async #sync(t: Tracked): Promise<void> {
    if (isFinal(t.status)) return;
    if (!t.queue)
      return this.#write(t, { kind: 'none', reason: 'InvalidNodeName', message: `node ${JSON.stringify(t.node.slice(0, 80))} is not a valid node name` });
    if (!t.status?.jobId) {
      if (t.timedOut) return this.#write(t, { kind: 'none', reason: 'TimedOutByNHC', message: 'NodeHealthCheck timed out before a job was made' });
      const r = await ingest([signalOf(t)], [], this.#d.ingest);
      const ignored = r.ignored[0];
      if (ignored) {
        this.#d.onIgnored?.(r.ignored);
        // Not final: the next resync asks again, and stores the job once the agent runs it.
        if (ignored.reason === 'agent-too-old') return this.#write(t, { kind: 'held', message: ignored.detail });
        return this.#write(t, { kind: 'none', reason: reasonOf(ignored), message: ignored.detail });
      }
    }
    let state = await this.#d.jobs.state(t.queue, t.key);
    if (t.timedOut && NOT_STARTED.has(state)) {
      const w = await this.#d.withdrawal.withdraw(t.queue, t.key);
      if (w === 'removed') {
        const message = `NodeHealthCheck timed out; job ${t.key} withdrawn before it started`;
        return this.#write(t, { kind: 'withdrawn', jobId: t.key, queue: t.queue, reason: 'TimedOutByNHC', message });
      }
      state = await this.#d.jobs.state(t.queue, t.key);
    }
    const job = state === 'completed' || state === 'failed' ? await this.#d.jobs.get(t.queue, t.key) : undefined;
    await this.#write(t, { kind: 'stored', jobId: t.key, queue: t.queue, state, job });
  }

  async #write(t: Tracked, view: JobView): Promise<void> {
    const next = remediationStatus(view, t.status, this.#d.now());
    if (!statusChanged(t.status, next)) return;
    if (!(await this.#d.api.writeStatus(t.ref, next))) return void this.#known.delete(t.ref.uid);
    // What the watch's own MODIFIED event will bring: no second write for it.
    t.status = next;
  }
}

export interface RemediationWatchContext {
  ingest: IngestDeps;
  common: Omit<SupervisedInformerOptions<KubernetesObject>, 'name' | 'path' | 'list'>;
  now: () => number;
  sleep: Sleep;
  log?: Logger | undefined;
  onIgnored?: ((ignored: readonly Ignored[]) => void) | undefined;
}

/** The informer on every VolumeMedicRemediation, and the resync loop that owns its objects' status. */
export function remediationWatch(
  o: RemediationWatchOptions,
  ctx: RemediationWatchContext,
): Pick<SupervisedInformer<KubernetesObject>, 'start' | 'stop' | 'state'> {
  const sync = new RemediationSync({
    api: o.api,
    jobs: o.jobs,
    withdrawal: o.withdrawal,
    ingest: ctx.ingest,
    now: ctx.now,
    log: ctx.log,
    onIgnored: ctx.onIgnored,
  });
  const inf = new SupervisedInformer<KubernetesObject>({ ...ctx.common, name: 'volumemedicremediations', path: REMEDIATIONS_PATH, list: () => o.api.list() });
  inf.on('add', (obj) => sync.observe(obj));
  inf.on('update', (obj) => sync.observe(obj));
  inf.on('delete', (obj) => sync.removed(obj));
  const stop = new AbortController();
  let loop: Promise<void> | undefined;
  return {
    state: () => inf.state(),
    async start() {
      await inf.start();
      loop = (async () => {
        while (!stop.signal.aborted) {
          await ctx.sleep(o.resyncMs ?? 15_000, stop.signal);
          if (!stop.signal.aborted) await sync.resync();
        }
      })();
    },
    async stop() {
      stop.abort();
      await inf.stop();
      await loop;
    },
  };
}
