import type { CoreV1Event, KubeConfig, KubernetesObject, V1Node } from '@kubernetes/client-node';
import type { IngestDeps } from '../ingest/ingest.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import { kubeClients } from '../../adapters/kube/kube-config.ts';
import { eventSignals } from './event-signals.ts';
import { DEFAULT_EVENT_TRUST, type EventTrust } from '../sources/event-trust.ts';
import type { KubeMetrics } from '../../adapters/kube/kube-metrics.ts';
import { NodeReadyTracker, nodeRecoveredSignal, observeNode } from './node-ready.ts';
import { OutOfServiceWatch, type SightingStore } from './out-of-service.ts';
import { NodeReadonlyTracker } from './node-readonly.ts';
import { reconcileOnce, type ReconcileResult } from './reconcile.ts';
import { ingestSink, type SignalSink } from './signal-sink.ts';
import { SupervisedInformer, realSleep, type BackoffPolicy, type Sleep, type WatchState } from '../../adapters/kube/supervised-informer.ts';
import { GenerationalMap } from '../../core/collections/generational-map.ts';
import type { Ignored } from '../../core/signals/index.ts';
import { remediationWatch, type RemediationWatchOptions } from './node-healthcheck.ts';

// The receiver's Kubernetes sources, owned in one place: a Node watch, one Event watch per reason
// volume-medic acts on, and the periodic reconcile. All of them end in the same ingest path as the
// webhooks. close() stops them in order; state() is what /readyz and metrics show.

/** Event reasons watched. One watch each (field selector reason=X): the API server filters, and
 *  the client's cache holds only these Events instead of every Event of the last hour. */
const WATCHED_EVENT_REASONS = ['FailedMount', 'FailedMapVolume', 'FailedAttachVolume', 'Failed', 'NodeReady', 'Rebooted'] as const;

export interface KubeWatchesOptions {
  kubeConfig: KubeConfig;
  /** The receiver's triage lookups and dispatcher. */
  ingest: IngestDeps;
  log?: Logger;
  metrics?: KubeMetrics;
  sleep?: Sleep;
  now?: () => number;
  backoff?: BackoffPolicy;
  /** Default WATCHED_EVENT_REASONS. */
  eventReasons?: readonly string[];
  /** Which Events are believed (the receiver passes NPD_EVENT_SOURCES, NPD_EVENT_NAMESPACE). Default DEFAULT_EVENT_TRUST. */
  eventTrust?: EventTrust;
  /** Watch Nodes. Default true. */
  nodes?: boolean;
  /** Period of the reconcile loop; 0 runs it once at start only. Default 5 minutes. */
  reconcileIntervalMs?: number;
  /** Nodes Ready for less than this are reconciled as possible recoveries. Default 30 minutes. */
  recentReadyMs?: number;
  /** Replace the ingest path (tests). */
  sink?: SignalSink;
  /**
   * Told what did not become a job, with its source and reason: an Event the watch did not believe
   * and a signal triage ignored (the receiver counts them in volume_medic_signals_ignored_total).
   */
  onIgnored?: (ignored: readonly Pick<Ignored, 'source' | 'reason'>[]) => void;
  /** Told when a Node object is deleted, with its uid (the receiver revokes that node's credentials). */
  onNodeDeleted?: (node: string, uid?: string) => void;
  /** Where the out-of-service taint's first sight is kept (src/adapters/controls/taint-sightings.ts); none: no taint releases. */
  taintSightings?: SightingStore;
  /** Watch VolumeMedicRemediation objects (NodeHealthCheck, docs/node-healthcheck.md); none: not watched. */
  remediations?: RemediationWatchOptions;
}

interface ReconcileState {
  runs: number;
  lastRunAt?: number;
  lastResult?: ReconcileResult;
  lastError?: string;
}

export interface KubeWatchesState {
  /** Every watch has listed and is connected. */
  ready: boolean;
  watches: WatchState[];
  reconcile: ReconcileState;
}

export interface KubeWatches {
  state(): KubeWatchesState;
  /** Run a reconcile now (also what the periodic loop calls). */
  reconcileNow(): Promise<ReconcileResult | undefined>;
  close(): Promise<void>;
}

/** What the watches do alike, whatever they watch. */
type Watch = Pick<SupervisedInformer<KubernetesObject>, 'start' | 'stop' | 'state'>;

/** What every watch and the reconcile are built from. */
interface WatchContext {
  o: KubeWatchesOptions;
  core: ReturnType<typeof kubeClients>['core'];
  sink: SignalSink;
  /** The options every SupervisedInformer shares. */
  common: ReturnType<typeof informerCommon>;
  now: () => number;
  trust: EventTrust;
  count(watch: string, outcome: string): void;
}

const informerCommon = (o: KubeWatchesOptions, sleep: Sleep, now: () => number) => ({
  kubeConfig: o.kubeConfig,
  sleep,
  now,
  ...(o.backoff ? { backoff: o.backoff } : {}),
  ...(o.log ? { log: o.log } : {}),
  ...(o.metrics ? { metrics: o.metrics } : {}),
});

export async function startKubeWatches(o: KubeWatchesOptions): Promise<KubeWatches> {
  const sleep = o.sleep ?? realSleep;
  const now = o.now ?? Date.now;
  const stop = new AbortController();
  const sink =
    o.sink ??
    ingestSink({
      deps: o.ingest,
      sleep,
      signal: stop.signal,
      ...(o.log ? { log: o.log } : {}),
      onStoreFailed: (origin) => o.metrics?.observed.inc({ watch: origin, outcome: 'store_failed' }),
      ...(o.onIgnored ? { onIgnored: o.onIgnored } : {}),
    });
  const ctx: WatchContext = {
    o,
    core: kubeClients(o.kubeConfig).core,
    sink,
    common: informerCommon(o, sleep, now),
    now,
    trust: o.eventTrust ?? DEFAULT_EVENT_TRUST,
    count: (watch, outcome) => o.metrics?.observed.inc({ watch, outcome }),
  };
  const informers: Watch[] = [
    ...(o.nodes !== false ? [nodeWatch(ctx)] : []),
    ...eventWatches(ctx),
    ...(o.remediations ? [remediationWatch(o.remediations, { ingest: o.ingest, common: ctx.common, now, sleep, log: o.log, onIgnored: o.onIgnored })] : []),
  ];
  const reconciler = reconcilerOf(ctx);

  // Start the watches first: the reconcile then finds what happened while they were not watching.
  await Promise.all(informers.map((i) => i.start()));
  const interval = o.reconcileIntervalMs ?? 5 * 60_000;
  const loop = (async () => {
    await reconciler.reconcileNow();
    while (interval > 0 && !stop.signal.aborted) {
      await sleep(interval, stop.signal);
      if (!stop.signal.aborted) await reconciler.reconcileNow();
    }
  })();

  let closing: Promise<void> | undefined;
  return {
    state: () => {
      const watches = informers.map((i) => i.state());
      return { ready: watches.every((w) => w.status === 'watching'), watches, reconcile: reconciler.state() };
    },
    reconcileNow: reconciler.reconcileNow,
    close: () =>
      (closing ??= (async () => {
        stop.abort();
        await Promise.all(informers.map((i) => i.stop()));
        await loop;
        await reconciler.running();
      })()),
  };
}

/**
 * The Node watch: a Node Ready again or rebooted is a recovery signal; NPD's read-only file system
 * condition turning True is a readonly-filesystem-recovery trigger; a deleted Node is told to onNodeDeleted.
 */
function nodeWatch({ o, core, sink, common, count }: WatchContext): Watch {
  const tracker = new NodeReadyTracker();
  const oos = o.taintSightings ? new OutOfServiceWatch(o.taintSightings) : undefined;
  const nodes = new SupervisedInformer<V1Node>({ ...common, name: 'nodes', path: '/api/v1/nodes', list: () => core.listNode({}) });
  const readonly = new NodeReadonlyTracker();
  const onNode = async (obj: V1Node): Promise<void> => {
    const n = observeNode(obj);
    if (!n) return count('nodes', 'invalid');
    if (oos) await outOfService(oos, obj, sink, o.log);
    // NPD's ReadonlyFilesystem / XfsShutdown turning True: a trigger for the node agent (0008 §1.4).
    const stopped = readonly.observe(obj);
    if (stopped.length) await sink.submit(stopped, 'nodes');
    const r = tracker.observe(n);
    if (!r) return count('nodes', 'unchanged');
    count('nodes', 'signal');
    const why = r.why === 'ready-again' ? `Ready ${r.from} -> True` : `boot id ${r.previousBootId} -> ${n.bootId}`;
    await sink.submit([nodeRecoveredSignal(n, 'k8s-watch', `Node ${n.name} ${why} (watch)`)], 'nodes');
  };
  nodes.on('add', onNode);
  nodes.on('update', onNode);
  nodes.on('delete', (obj) => {
    if (!obj.metadata?.name) return;
    tracker.forget(obj.metadata.name);
    oos?.forget(obj.metadata.name);
    readonly.forget(obj.metadata.name);
    o.onNodeDeleted?.(obj.metadata.name, obj.metadata.uid);
  });
  return nodes;
}

/** The taint's first sight recorded or dropped, and a Ready tainted node to triage; a Redis failure waits for the Node's next update. */
async function outOfService(oos: OutOfServiceWatch, obj: V1Node, sink: SignalSink, log: Logger | undefined): Promise<void> {
  try {
    const signal = await oos.observe(obj);
    if (signal) await sink.submit([signal], 'nodes');
  } catch (err) {
    log?.warn({ node: obj.metadata?.name, err: (err as Error).message }, 'could not record the out-of-service taint; the next update of the Node tries again');
  }
}

/** One Event watch per reason; each Event believed (event-signals.ts) goes to the sink. */
function eventWatches({ o, core, sink, common, trust, count }: WatchContext): Watch[] {
  // An Event's uid -> the resourceVersion handled: a relist hands every cached Event over again,
  // and an unchanged one need not be triaged twice. Bounded: the newest 10,000 at least.
  const handled = new GenerationalMap<string, string>(20_000);
  return (o.eventReasons ?? WATCHED_EVENT_REASONS).map((reason) => {
    const name = `events-${reason}`;
    const fieldSelector = `reason=${reason}`;
    const inf = new SupervisedInformer<CoreV1Event>({
      ...common,
      name,
      path: '/api/v1/events',
      fieldSelector,
      list: () => core.listEventForAllNamespaces({ fieldSelector }),
    });
    const onEvent = async (obj: CoreV1Event): Promise<void> => {
      const uid = obj.metadata?.uid;
      const rv = obj.metadata?.resourceVersion ?? '';
      if (uid && handled.get(uid) === rv) return count(name, 'unchanged');
      if (uid) handled.set(uid, rv);
      const r = eventSignals(obj, trust);
      count(name, r.outcome);
      // Debug, not info: anyone who may create Events can make many that are not believed.
      if (r.outcome === 'ignored') {
        o.log?.debug({ watch: name, uid, reason: r.reason, detail: r.detail }, 'watched Event ignored');
        o.onIgnored?.([{ source: 'k8s-watch-event', reason: r.reason }]);
      }
      if (r.outcome === 'signal') await sink.submit(r.signals, name);
    };
    inf.on('add', onEvent);
    inf.on('update', onEvent);
    return inf;
  });
}

/** The reconcile: one run at a time (a call during a run shares it), its outcome kept for state(). */
function reconcilerOf({ o, core, sink, now, trust }: WatchContext) {
  const rec: ReconcileState = { runs: 0 };
  let running: Promise<ReconcileResult | undefined> | undefined;
  const reconcileNow = (): Promise<ReconcileResult | undefined> =>
    (running ??= (async () => {
      try {
        const result = await reconcileOnce({
          core,
          sink,
          now,
          recentReadyMs: o.recentReadyMs ?? 30 * 60_000,
          eventTrust: trust,
          ...(o.log ? { log: o.log } : {}),
        });
        Object.assign(rec, { runs: rec.runs + 1, lastRunAt: now(), lastResult: result });
        delete rec.lastError;
        o.metrics?.reconciles.inc({ outcome: 'ok' });
        return result;
      } catch (err) {
        Object.assign(rec, { runs: rec.runs + 1, lastRunAt: now(), lastError: (err as Error).message });
        o.metrics?.reconciles.inc({ outcome: 'failed' });
        o.log?.warn({ err: (err as Error).message }, 'reconcile failed; the next run will try again');
        return undefined;
      } finally {
        running = undefined;
      }
    })());
  return { reconcileNow, state: (): ReconcileState => ({ ...rec }), running: () => running };
}
