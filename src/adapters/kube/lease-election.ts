import { ApiException, CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../observability/logger.ts';

// Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection does it:
// read the Lease; take it when it is free or has not changed for its whole duration (measured on
// this process's own clock, from when it last saw the record change, so clock skew between
// replicas does not matter); renew it while leading; a create or replace that loses the race gets
// 409 and stays a follower. @kubernetes/client-node 2.x has no leader-election helper.
//
// Invariant: a leader stops saying it leads `renewDeadline` after its last successful renewal,
// which is shorter than the lease duration, so a follower can take over only after the old leader
// has stopped (both clocks running at about the same rate). An unreachable API server therefore
// ends leadership rather than keeping a stale one.

export interface LeaseElectionOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  name: string;
  /** Unique per process: the pod name and a random suffix. */
  identity: string;
  leaseDurationSeconds: number;
  log: Logger;
  now?: () => number;
  /** Called when this process starts or stops leading. */
  onChange?: (leading: boolean) => void;
}

/** How long a leader may go without renewing (client-go: 10 s of a 15 s lease), and how often to try. */
export const renewDeadlineMs = (leaseSeconds: number): number => Math.floor((leaseSeconds * 1000 * 2) / 3);
const retryPeriodMs = (leaseSeconds: number): number => Math.floor((leaseSeconds * 1000) / 5);

const code = (err: unknown): number | undefined => (err instanceof ApiException ? err.code : undefined);
// MicroTime goes out with six fractional digits (the API server refuses a Date's three).
const micro = (ms: number): V1MicroTime => new V1MicroTime(ms);

export class LeaseElection {
  private readonly api: CoordinationV1Api;
  private readonly now: () => number;
  private readonly deadlineMs: number;
  /** When this process last renewed (or took) the lease; leading until that + deadline. */
  private renewedAt: number | undefined;
  /** The record last seen (resourceVersion) and when it was first seen, on our clock. */
  private observed: { version: string; at: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private wasLeading = false;
  private lastError: string | undefined;

  private readonly opts: LeaseElectionOptions;

  constructor(opts: LeaseElectionOptions) {
    this.opts = opts;
    this.api = opts.kubeConfig.makeApiClient(CoordinationV1Api);
    this.now = opts.now ?? Date.now;
    this.deadlineMs = renewDeadlineMs(opts.leaseDurationSeconds);
  }

  /** True while this process holds the lease (renewed within the renew deadline). */
  leading(): boolean {
    return this.renewedAt !== undefined && this.now() - this.renewedAt < this.deadlineMs;
  }

  /** Try every retry period until stopped. */
  start(): void {
    const loop = (): void => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
        if (this.timer !== undefined) this.timer = setTimeout(loop, retryPeriodMs(this.opts.leaseDurationSeconds)).unref();
      });
    };
    this.timer = setTimeout(loop, 0).unref();
  }

  /** One round: take, renew, or observe the Lease. Never throws. */
  async tick(): Promise<void> {
    try {
      await this.tryAcquireOrRenew();
      this.lastError = undefined;
    } catch (err) {
      const message = (err as Error).message;
      // Once per distinct failure (403: the Role is missing; connection refused): not every 3 s.
      if (message !== this.lastError)
        this.opts.log.warn({ err: message, lease: `${this.opts.namespace}/${this.opts.name}` }, 'leader election: cannot read or write the Lease');
      this.lastError = message;
    }
    this.report();
  }

  /**
   * Stop trying. `release`: a leader gives the Lease up (holder cleared, duration 1 s) so
   * another replica takes over at its next try instead of after the lease duration.
   */
  async stop(opts: { release: boolean } = { release: true }): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    if (opts.release && this.leading()) {
      try {
        const lease = await this.api.readNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace });
        if (lease.spec?.holderIdentity === this.opts.identity) {
          const t = micro(this.now());
          await this.api.replaceNamespacedLease({
            name: this.opts.name,
            namespace: this.opts.namespace,
            body: { ...lease, spec: { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, acquireTime: t, renewTime: t } },
          });
        }
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'leader election: could not release the Lease; another replica takes over when it expires');
      }
    }
    this.renewedAt = undefined;
    this.report();
  }

  private report(): void {
    const leading = this.leading();
    if (leading === this.wasLeading) return;
    this.wasLeading = leading;
    this.opts.log.info(
      { lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity },
      leading ? 'leader election: leading' : 'leader election: not leading',
    );
    this.opts.onChange?.(leading);
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { name, namespace, identity, leaseDurationSeconds } = this.opts;
    const started = this.now();
    let lease: V1Lease | undefined;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (code(err) !== 404) throw err;
    }
    if (!lease) {
      const t = micro(started);
      try {
        await this.api.createNamespacedLease({
          namespace,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: t, renewTime: t, leaseTransitions: 0 },
          },
        });
        this.renewedAt = started;
      } catch (err) {
        if (code(err) !== 409) throw err;
      }
      return;
    }
    const version = lease.metadata?.resourceVersion ?? '';
    if (this.observed?.version !== version) this.observed = { version, at: started };
    const holder = lease.spec?.holderIdentity ?? '';
    const duration = (lease.spec?.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const mine = holder === identity;
    const expired = started - this.observed.at >= duration;
    if (!mine && holder !== '' && !expired) {
      this.renewedAt = undefined;
      return;
    }
    const t = micro(started);
    const spec = lease.spec ?? {};
    try {
      const updated = await this.api.replaceNamespacedLease({
        name,
        namespace,
        body: {
          ...lease,
          spec: {
            ...spec,
            holderIdentity: identity,
            leaseDurationSeconds,
            renewTime: t,
            acquireTime: mine && spec.acquireTime ? spec.acquireTime : t,
            leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
          },
        },
      });
      this.renewedAt = started;
      this.observed = { version: updated.metadata?.resourceVersion ?? '', at: started };
    } catch (err) {
      // Another replica wrote first: it leads; look again next round.
      if (code(err) !== 409) throw err;
      this.renewedAt = undefined;
    }
  }
}
