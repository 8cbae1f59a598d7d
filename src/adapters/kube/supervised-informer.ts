import { setTimeout as delay } from 'node:timers/promises';
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.ts';
import type { KubeMetrics } from './kube-metrics.ts';

// An informer (the client's ListWatch) with an owner. What the client does by itself, and what it
// does not (read from @kubernetes/client-node 2.0.1 dist/cache.js):
// - a watch that ends cleanly, or times out client-side, reconnects from the last resourceVersion;
// - 410 Gone (an ERROR line in the stream, or an HTTP 410) clears the resourceVersion and relists;
// - ANY other error (a list that fails, a 5xx, a connection reset, an auth failure) calls the
//   `error` callbacks and the informer stops for good.
// So this owner restarts it after errors with capped exponential backoff (sleep and clock
// injected), reports its state for /readyz and metrics, and makes sure nothing it runs can throw
// into the client's callbacks: the process never goes down because the API server did.

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export const realSleep: Sleep = (ms, signal) => delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined);

export interface BackoffPolicy {
  /** First delay after an error. Default 1 s. */
  initialMs: number;
  /** Cap of the doubling delay. Default 60 s. */
  maxMs: number;
  /** An informer that ran this long without error starts its backoff over. Default: maxMs. */
  stableMs?: number;
}
const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000 };

/** watching: listed, and the API server accepted the current watch request. */
type WatchStatus = 'starting' | 'watching' | 'restarting' | 'stopped';

export interface WatchState {
  name: string;
  status: WatchStatus;
  /** Listed at least once: the cache holds the cluster's state as of some moment. */
  synced: boolean;
  restarts: number;
  lists: number;
  /** The delay before the pending restart, while restarting. */
  nextRetryMs?: number;
  lastError?: string;
  lastErrorAt?: number;
}

export interface SupervisedInformerOptions<T extends KubernetesObject> {
  name: string;
  kubeConfig: KubeConfig;
  /** API path of the collection, e.g. /api/v1/nodes. */
  path: string;
  /** Lists the collection; items are handed on as plain JSON (see toPlain). */
  list: () => Promise<KubernetesListObject<T>>;
  fieldSelector?: string;
  labelSelector?: string;
  backoff?: BackoffPolicy;
  sleep?: Sleep;
  now?: () => number;
  log?: Logger;
  metrics?: KubeMetrics;
}

/**
 * Objects from a typed list carry Date instances where the watch stream carries RFC 3339 strings;
 * the cache and the handlers see one shape only: the JSON one, as the API server wrote it.
 */
export const toPlain = <T>(o: T): T => JSON.parse(JSON.stringify(o)) as T;

const message = (err: unknown): string => {
  if (err instanceof Error) return err.message || err.name;
  const e = err as { statusCode?: number; code?: number; body?: unknown } | undefined;
  return e?.statusCode ? `HTTP ${e.statusCode}` : e?.code ? `HTTP ${e.code}` : String(err);
};

export class SupervisedInformer<T extends KubernetesObject> {
  readonly name: string;
  private readonly informer: ListWatch<T>;
  private readonly opts: SupervisedInformerOptions<T>;
  private readonly backoff: BackoffPolicy;
  private readonly sleep: Sleep;
  private readonly now: () => number;
  private readonly abort = new AbortController();
  private st: WatchState;
  private attempt = 0;
  private startedAt = 0;
  private restartPending = false;
  private stopped = false;

  constructor(opts: SupervisedInformerOptions<T>) {
    this.opts = opts;
    this.name = opts.name;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    this.sleep = opts.sleep ?? realSleep;
    this.now = opts.now ?? Date.now;
    this.st = { name: opts.name, status: 'starting', synced: false, restarts: 0, lists: 0 };
    const list = async (): Promise<KubernetesListObject<T>> => {
      const l = await opts.list();
      this.st = { ...this.st, lists: this.st.lists + 1, synced: true };
      if (this.st.lists > 1) opts.metrics?.relists.inc({ watch: this.name });
      return { ...l, items: l.items.map(toPlain) };
    };
    const onWatching = (): void => {
      if (this.st.status !== 'stopped') this.st = { ...this.st, status: 'watching' };
      opts.metrics?.up.set({ watch: this.name }, 1);
    };
    this.informer = new ListWatch<T>(
      opts.path,
      new GuardedWatch(opts.kubeConfig, () => this.stopped, onWatching),
      list,
      false,
      opts.labelSelector,
      opts.fieldSelector,
      {
        // The client's own reconnect delay (after clean ends) also goes through the injected sleep.
        delayFn: (ms) => this.sleep(ms, this.abort.signal),
      },
    );
    this.informer.on('error', (err?: unknown) => this.onError(err));
  }

  /** Register a handler; it runs guarded (an exception is logged, never thrown into the client). */
  on(verb: 'add' | 'update' | 'delete', handler: (obj: T) => void | Promise<void>): void {
    this.informer.on(verb, (obj: T) => {
      try {
        const r = handler(obj);
        if (r && typeof (r as Promise<void>).catch === 'function') {
          (r as Promise<void>).catch((err: unknown) => this.opts.log?.error({ watch: this.name, err: message(err) }, 'watch handler failed'));
        }
      } catch (err) {
        this.opts.log?.error({ watch: this.name, err: message(err) }, 'watch handler failed');
      }
    });
  }

  get cache(): ObjectCache<T> {
    return this.informer;
  }

  /** Starts listing and watching. Never rejects: a failure to start is an error like any other. */
  async start(): Promise<void> {
    this.startedAt = this.now();
    try {
      await this.informer.start();
    } catch (err) {
      this.onError(err);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.st = { ...this.st, status: 'stopped' };
    this.opts.metrics?.up.set({ watch: this.name }, 0);
    await this.informer.stop();
  }

  state(): WatchState {
    return { ...this.st };
  }

  private onError(err: unknown): void {
    if (this.stopped || this.restartPending) return;
    if (this.now() - this.startedAt >= (this.backoff.stableMs ?? this.backoff.maxMs)) this.attempt = 0;
    const wait = Math.min(this.backoff.initialMs * 2 ** this.attempt, this.backoff.maxMs);
    this.attempt++;
    this.restartPending = true;
    this.st = { ...this.st, status: 'restarting', nextRetryMs: wait, lastError: message(err), lastErrorAt: this.now() };
    this.opts.metrics?.up.set({ watch: this.name }, 0);
    this.opts.log?.warn({ watch: this.name, err: message(err), retryInMs: wait }, 'watch stopped; restarting');
    void this.restartAfter(wait);
  }

  private async restartAfter(ms: number): Promise<void> {
    await this.sleep(ms, this.abort.signal);
    this.restartPending = false;
    if (this.stopped) return;
    this.st = { ...this.st, restarts: this.st.restarts + 1 };
    delete this.st.nextRetryMs;
    this.opts.metrics?.restarts.inc({ watch: this.name });
    // Same ListWatch: it keeps its cache and resourceVersion, so a restart resumes the watch; if
    // that version is too old by now, the server's 410 makes it relist.
    await this.start();
  }
}

/**
 * The client's Watch, with bookmarks requested (a quiet collection's resourceVersion keeps up, so
 * a reconnect rarely needs a relist, and the stream's inactivity timer is fed), no new request
 * after the owner stopped, and a failure before the request (no cluster, credentials that cannot
 * be read) reported through `done` instead of rejecting inside the client, where nobody awaits it.
 */
class GuardedWatch extends Watch {
  private readonly isStopped: () => boolean;
  private readonly onWatching: () => void;

  constructor(config: KubeConfig, isStopped: () => boolean, onWatching: () => void) {
    super(config);
    this.isStopped = isStopped;
    this.onWatching = onWatching;
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    if (this.isStopped()) {
      queueMicrotask(() => done(null));
      return new AbortController();
    }
    try {
      // watch() resolves once the answer's headers are in; `done` has run by then if it was an error.
      let ended = false;
      const controller = await super.watch(path, { ...queryParams, allowWatchBookmarks: true }, callback, (err) => {
        ended = true;
        done(err);
      });
      if (!ended) this.onWatching();
      return controller;
    } catch (err) {
      queueMicrotask(() => done(err));
      return new AbortController();
    }
  }
}
