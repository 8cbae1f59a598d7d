import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFinished, statsKey } from '../../../../src/adapters/stats/job-stats.ts';
import { LeaseElection, renewDeadlineMs } from '../../../../src/adapters/kube/lease-election.ts';
import { FLEET_LEASE_NAME } from '../../../../src/control/fleet/fleet-exporter.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../../testkit/fake-kube-api.ts';
import { apiCallOf, uncoveredByRbac } from '../../../support/kube-objects.ts';
import { DIRECT_CALLS } from '../../../../src/adapters/kube/rbac.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';

// Fleet-wide series (read from Redis, the same on every receiver) come from exactly one receiver
// replica: the leader of a coordination.k8s.io/v1 Lease, elected through the real
// @kubernetes/client-node against the fake API server (real wire protocol, optimistic
// concurrency on replace). The others serve only their own process series, so a sum over
// replicas never doubles; another takes over when the leader hands the Lease over or stops
// renewing it.

const NS = 'volume-medic';
const silent = pino({ level: 'silent' });
let api: FakeKubeApi;

beforeAll(async () => {
  api = await startFakeKubeApi();
});
afterAll(async () => {
  await api?.close();
});

describe('leader election on a Lease (injected clock)', () => {
  const LEASE_S = 15;
  let clock = 1_800_000_000_000;
  const elector = (name: string, identity: string): LeaseElection =>
    new LeaseElection({
      kubeConfig: api.kubeConfig(),
      namespace: NS,
      name,
      identity,
      leaseDurationSeconds: LEASE_S,
      log: silent,
      now: () => clock,
    });

  it('one of two leads; the other takes over only once the Lease has not been renewed for its whole duration', async () => {
    const name = 'lease-expiry';
    const a = elector(name, 'receiver-a');
    const b = elector(name, 'receiver-b');
    await a.tick();
    await b.tick();
    expect([a.leading(), b.leading()]).toEqual([true, false]);
    const lease = api.get('coordination.k8s.io/v1', 'Lease', name, NS)!;
    expect(lease['spec']).toMatchObject({ holderIdentity: 'receiver-a', leaseDurationSeconds: LEASE_S, leaseTransitions: 0 });
    // MicroTime: the real API server takes exactly six fractional digits.
    expect(lease['spec'].renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // a renews while b watches: b never takes it.
    for (let i = 0; i < 5; i++) {
      clock += 5_000;
      await a.tick();
      await b.tick();
      expect([a.leading(), b.leading()]).toEqual([true, false]);
    }
    // a stops renewing (its process is gone): b waits for the whole duration, from when it last saw a change.
    clock += LEASE_S * 1000 - 1;
    await b.tick();
    expect(b.leading()).toBe(false);
    clock += 1;
    await b.tick();
    expect(b.leading()).toBe(true);
    // a's own view ended at its renew deadline, before b could take over.
    expect(a.leading()).toBe(false);
    expect(api.get('coordination.k8s.io/v1', 'Lease', name, NS)!['spec']).toMatchObject({
      holderIdentity: 'receiver-b',
      leaseTransitions: 1,
    });
  });

  it('a leader that cannot renew stops leading at its renew deadline', async () => {
    const a = elector('lease-deadline', 'receiver-a');
    await a.tick();
    expect(a.leading()).toBe(true);
    api.failNext(/leases\/lease-deadline/, 500, 10);
    clock += renewDeadlineMs(LEASE_S) - 1;
    await a.tick();
    expect(a.leading()).toBe(true);
    clock += 1;
    expect(a.leading()).toBe(false);
  });

  it('two replicas racing for a free Lease: exactly one wins (409 Conflict for the other)', async () => {
    const a = elector('lease-race', 'receiver-a');
    const b = elector('lease-race', 'receiver-b');
    await Promise.all([a.tick(), b.tick()]);
    expect([a.leading(), b.leading()].filter(Boolean)).toHaveLength(1);
    // Both have seen the record; then it goes unrenewed for its whole duration, and the late
    // holder's renewal and the other's take-over reach the server before either is answered.
    await a.tick();
    await b.tick();
    clock += LEASE_S * 1000;
    const release = api.holdRequests(/^PUT .*\/leases\/lease-race$/);
    const puts = api.requests.length;
    const ticks = Promise.all([a.tick(), b.tick()]);
    for (let waited = 0; api.requests.slice(puts).filter((r) => r.method === 'PUT').length < 2; waited += 10) {
      if (waited > 10_000) throw new Error('both replicas should have tried to write the Lease');
      await new Promise((r) => setTimeout(r, 10));
    }
    release();
    await ticks;
    expect([a.leading(), b.leading()].filter(Boolean)).toHaveLength(1);
  });

  it('a leader that stops hands the Lease over: the other takes it at its next try', async () => {
    const a = elector('lease-release', 'receiver-a');
    const b = elector('lease-release', 'receiver-b');
    await a.tick();
    await b.tick();
    await a.stop({ release: true });
    expect(a.leading()).toBe(false);
    await b.tick();
    expect(b.leading()).toBe(true);
  });
});

describe('two receivers: only the leader exports the fleet-wide series', () => {
  const prefix = uniquePrefix('fleetlease');
  const receivers: Receiver[] = [];

  afterAll(async () => {
    for (const r of receivers) await r.close();
    await dropPrefix(prefix);
  });

  const scrape = async (r: Receiver): Promise<string> => (await fetch(`${r.url}/metrics`)).text();
  const exportsFleet = (text: string): boolean => /^volume_medic_jobs_finished_total\{/m.test(text);

  async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('one exports jobs finished, breakers and parked jobs; the other only its own series; the other takes over when the leader stops', async () => {
    const redis = new Redis(redisUrl());
    await recordFinished(redis, statsKey(prefix), 'residual-multipath-cleanup', 'succeeded', 2);
    await redis.quit();
    const start = () =>
      startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['fleet-lease-token-0123456789'], fleetMetricsLeaseSeconds: 2 }), {
        log: silent,
        lease: { kubeConfig: api.kubeConfig(), namespace: NS },
      });
    // Counted from before the receivers start: the first to start may create the Lease before start() returns.
    const before = api.requests.length;
    receivers.push(await start(), await start());

    const [leader, follower] = await until('one leader', async () => {
      const texts = await Promise.all(receivers.map(scrape));
      const leaders = texts.map(exportsFleet);
      if (leaders.filter(Boolean).length !== 1) return undefined;
      return leaders[0] ? [0, 1] : [1, 0];
    });
    const [lt, ft] = [await scrape(receivers[leader!]!), await scrape(receivers[follower!]!)];
    expect(lt).toMatch(/^volume_medic_jobs_finished_total\{runbook="residual-multipath-cleanup",outcome="succeeded"\} 1$/m);
    expect(lt).toMatch(/^volume_medic_breaker_tripped\{/m);
    expect(lt).toMatch(/^volume_medic_fleet_metrics_exporter 1$/m);
    expect(ft).not.toMatch(
      /^volume_medic_(jobs_finished_total|untrusted_refused_total|job_duration_seconds_bucket|breaker_tripped|jobs_parked|paused|queue_jobs)\{/m,
    );
    expect(ft).not.toMatch(/^# TYPE volume_medic_queue_jobs /m);
    expect(lt).toMatch(/^# TYPE volume_medic_queue_jobs gauge$/m);
    expect(ft).toMatch(/^volume_medic_fleet_metrics_exporter 0$/m);
    // The follower still serves its own process series.
    for (const t of [lt, ft]) expect(t).toMatch(/^process_cpu_seconds_total \d/m);
    expect(api.get('coordination.k8s.io/v1', 'Lease', FLEET_LEASE_NAME, NS)!['spec'].holderIdentity).toBeTruthy();

    // The leader goes away (a rolling update): the other exports, and the first no longer does.
    const old = receivers[leader!]!;
    await old.close();
    receivers.splice(leader!, 1);
    await until('the follower to take over', async () => (exportsFleet(await scrape(receivers[0]!)) ? true : undefined));
    expect(await scrape(receivers[0]!)).toMatch(/^volume_medic_fleet_metrics_exporter 1$/m);

    // Every API call the election made is in the receiver's list (src/adapters/kube/rbac.ts), in its own namespace.
    const made = api.requests.slice(before);
    expect(made.some((r) => r.method === 'PUT' && r.path.endsWith(`/leases/${FLEET_LEASE_NAME}`))).toBe(true);
    expect(uncoveredByRbac(made, 'receiver')).toEqual([]);
    // And the other way: every Lease call listed for the receiver was made (no grant nobody uses).
    const calls = new Set(made.map((r) => apiCallOf(r)?.call));
    const listed = DIRECT_CALLS.receiver.map((d) => d.call).filter((c) => c.startsWith('coordination.k8s.io/leases '));
    expect(listed.sort()).toEqual(['coordination.k8s.io/leases create', 'coordination.k8s.io/leases get', 'coordination.k8s.io/leases update']);
    expect(listed.filter((c) => !calls.has(c))).toEqual([]);
  }, 60_000);

  it('a receiver without Kubernetes access (npm start) exports the fleet-wide series itself', async () => {
    const r = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, tokens: ['fleet-lease-token-0123456789'] }), {
      log: silent,
    });
    receivers.push(r);
    const text = await scrape(r);
    expect(exportsFleet(text)).toBe(true);
    expect(text).toMatch(/^volume_medic_fleet_metrics_exporter 1$/m);
  });
});
