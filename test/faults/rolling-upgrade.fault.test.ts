import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../src/core/catalogue/queues.ts';
import { startPrivateRedis, type PrivateRedis } from '../support/redis-server.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../testkit/payloads.ts';
import { TEST_KEYS_DIR } from '../support/trust.ts';
import { waitFor } from '../support/wait.ts';
import { obtainRelease, type Release } from './support/release-tree.ts';
import {
  startClusterWorker,
  startEntryPointAgent,
  startNodeAgent,
  startReceiver,
  THIS_TREE,
  type FleetProcess,
  type ReleaseCode,
  type Role,
  type Shared,
} from './support/release-fleet.ts';
import { documentedUpgradeOrder } from './support/upgrade-order.ts';
import { EFFECTS_LOG, UPGRADE_STEPS } from './support/upgrade-runbook.ts';
import { readonlyCondition, startWebhookFlow } from './support/webhook-flow.ts';

// Issue 48: a rolling upgrade under load. The previous release as published (chart 0.2.0: the
// commit test/int/deploy/chart-upgrade.int.test.ts pins) runs a fleet: two receiver replicas,
// the cluster worker, four node agents, with resolved-node alerts flowing from an Alertmanager HA
// pair (every fifth one an NPD ReadonlyFilesystem condition, a runbook only 0.3.0 has) and every
// alert a job that runs two destructive steps on its node. Its processes are then replaced one by
// one by this tree's, in the order the CHANGELOG's 0.3.0 section documents ("Upgrade order: ..."),
// while the alerts keep flowing; the first node's old agent is SIGKILLed in the middle of a job.
// Nothing acknowledged is lost, no step runs twice (the killed job's second step is taken by the
// new agent from the old one's journal), no job is left behind, old and new agents both run jobs
// while they coexist, an alert sent to an old and a new receiver is one job, and every process
// replaced with SIGTERM exits 0.

const PREVIOUS = { version: '0.2.0', commit: 'fca5a87ada3ad127dcbaba28d453ebeea14b10f8' };
const CHANGELOG = join(THIS_TREE, 'deploy/charts/volume-medic/CHANGELOG.md');
const THIS_VERSION = /^version:\s*(\S+)/m.exec(readFileSync(join(THIS_TREE, 'deploy/charts/volume-medic/Chart.yaml'), 'utf8'))![1]!;
const NODES = ['upgrade-a', 'upgrade-b', 'upgrade-c', 'upgrade-d'];
/** A node whose agent is the release's real entry point (no alert names it): see startEntryPointAgent. */
const ENTRY_NODE = 'upgrade-entry';
const PREFIX = 'vmupgrade';
const TOKEN = 'upgrade-test-token-0123456789abcdef';
/** Alerts per second (each sent twice): modest, for a 2-core CI machine running a dozen processes. */
const RATE = 8;
/** How long the fleet runs between two replacements, so jobs run on each mix of versions. */
const DWELL_MS = 3_000;

/** The fingerprint of the alert whose job the first node's old agent is killed in the middle of. */
const PAUSED_ALERT = 'pausedjob';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends the paused alert for `node` and waits until its agent hangs in the job's second step. */
async function pausedJob(receiver: string, node: string, agent: FleetProcess): Promise<{ key: string; queue: string }> {
  const res = await post(`${receiver}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(node, 'resolved', PAUSED_ALERT)]), TOKEN);
  expect(res.status).toBe(202);
  const job = (res.json as { accepted: { key: string; queue: string }[] }).accepted[0]!;
  await waitFor(
    `${agent.version} ${agent.name} to pause in ${job.key}`,
    async () => (agent.output().includes(`PAUSED ${job.key} `) ? true : undefined),
    60_000,
  );
  return job;
}
const log = (line: string) => console.log(`[rolling-upgrade] ${line}`);

describe(`rolling upgrade from ${PREVIOUS.version} to ${THIS_VERSION} under load`, () => {
  let release: Release | { skip: string };
  let redis: PrivateRedis;
  let admin: Redis;
  let tokenDir: string;
  const hostRoots = new Map<string, string>();
  const running: FleetProcess[] = [];
  const stopped: { p: FleetProcess; code: number | null }[] = [];
  const killed: FleetProcess[] = [];

  beforeAll(async () => {
    const started = Date.now();
    release = obtainRelease(THIS_TREE, PREVIOUS.version, PREVIOUS.commit, log);
    log(
      'skip' in release
        ? `SKIPPED: ${release.skip}`
        : `${PREVIOUS.version} ${release.how} at ${release.root} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    if ('skip' in release) return;
    redis = await startPrivateRedis();
    admin = new Redis(redis.url, { maxRetriesPerRequest: null });
    tokenDir = mkdtempSync(join(tmpdir(), 'vm-upgrade-token-'));
    writeFileSync(join(tokenDir, 'token'), `${TOKEN}\n`);
    for (const n of [...NODES, ENTRY_NODE]) hostRoots.set(n, mkdtempSync(join(tmpdir(), `vm-upgrade-host-${n}-`)));
  }, 15 * 60_000);

  afterAll(async () => {
    await Promise.allSettled(running.map((p) => p.stop()));
    admin?.disconnect();
    await redis?.destroy();
    for (const d of [tokenDir, ...hostRoots.values()]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it(
    'loses nothing, doubles nothing and leaves nothing stuck, following the documented order',
    async (ctx) => {
      if ('skip' in release) {
        console.log(`[rolling-upgrade] skipped: ${release.skip}`);
        ctx.skip();
        return;
      }
      const order = documentedUpgradeOrder(CHANGELOG, THIS_VERSION);
      log(`documented order: ${order.join(' -> ')}`);
      const old: ReleaseCode = { version: PREVIOUS.version, root: release.root, previous: true };
      const next: ReleaseCode = { version: THIS_VERSION, root: THIS_TREE, previous: false };
      const shared: Shared = { redisUrl: redis.url, prefix: PREFIX, keysDir: TEST_KEYS_DIR, tokenFile: join(tokenDir, 'token') };

      const t0 = Date.now();
      const receivers: FleetProcess[] = [];
      const agents = new Map<string, FleetProcess>();
      const track = (p: FleetProcess): FleetProcess => {
        running.push(p);
        return p;
      };
      const retire = async (p: FleetProcess): Promise<void> => {
        running.splice(running.indexOf(p), 1);
        stopped.push({ p, code: await p.stop() });
      };
      receivers.push(...(await Promise.all(['receiver-1', 'receiver-2'].map((n) => startReceiver(old, n, shared).then(track)))));
      let clusterWorker = track(await startClusterWorker(old, shared));
      for (const n of NODES) agents.set(n, track(await startNodeAgent(old, n, hostRoots.get(n)!, shared, n === NODES[0] ? { PAUSE_KEY: PAUSED_ALERT } : {})));
      let entryAgent = track(await startEntryPointAgent(old, ENTRY_NODE, hostRoots.get(ENTRY_NODE)!, shared));
      log(`${PREVIOUS.version} fleet up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

      const flow = startWebhookFlow({
        token: TOKEN,
        nodes: NODES,
        targets: () => receivers.map((r) => ({ url: r.url, label: `${r.version} ${r.name}` })),
        perSecond: RATE,
      });
      await sleep(DWELL_MS);

      const effectsOf = (n: string): string[] => readLines(join(hostRoots.get(n)!, EFFECTS_LOG.slice(1)));
      const effects = (): string[] => NODES.flatMap(effectsOf);
      // Each node's log length when the first new agent started, and before the last old one stops.
      let coexistence: { from: number[]; to: number[] } | undefined;
      let paused: { key: string; queue: string } | undefined;
      const lengths = () => NODES.map((n) => effectsOf(n).length);
      const replace: Record<Role, () => Promise<void>> = {
        'node-agent': async () => {
          // A DaemonSet's rolling update: one node at a time, the old pod gone before the new starts.
          for (const [i, n] of NODES.entries()) {
            if (i === 0) {
              // The first node's old agent dies mid-job (its grace period ran out): the new one must
              // finish that job from the journal the old one left, taking no step twice.
              paused = await pausedJob(receivers[0]!.url, n, agents.get(n)!);
              const dying = agents.get(n)!;
              await dying.kill();
              running.splice(running.indexOf(dying), 1);
              killed.push(dying);
            } else await retire(agents.get(n)!);
            agents.set(n, track(await startNodeAgent(next, n, hostRoots.get(n)!, shared)));
            if (i === 0) coexistence = { from: lengths(), to: [] };
            if (i === NODES.length - 2) {
              await sleep(DWELL_MS);
              coexistence!.to = lengths();
            }
            await sleep(DWELL_MS);
          }
          await retire(entryAgent);
          entryAgent = track(await startEntryPointAgent(next, ENTRY_NODE, hostRoots.get(ENTRY_NODE)!, shared));
        },
        'cluster-worker': async () => {
          // Recreate, as its Deployment's strategy says.
          await retire(clusterWorker);
          clusterWorker = track(await startClusterWorker(next, shared));
          await sleep(DWELL_MS);
        },
        receiver: async () => {
          // maxSurge 1, maxUnavailable 0: the new replica is in service before the old one leaves it.
          for (const name of ['receiver-1', 'receiver-2']) {
            const fresh = track(await startReceiver(next, name, shared));
            const i = receivers.findIndex((r) => r.name === name);
            const gone = receivers[i]!;
            receivers[i] = fresh;
            await retire(gone);
            await sleep(DWELL_MS);
          }
          await retire(entryAgent);
          entryAgent = track(await startEntryPointAgent(next, ENTRY_NODE, hostRoots.get(ENTRY_NODE)!, shared));
        },
      };
      for (const role of order) {
        const at = Date.now();
        await replace[role]();
        log(`${role} replaced by ${THIS_VERSION} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      }
      await sleep(DWELL_MS);
      const result = await flow.stop();
      log(
        `${result.sent} alerts sent twice, ${result.acked.length} sends acknowledged, ${result.retries} sends retried, ${result.gaveUp} given up, in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );

      // Every acknowledged job runs to its end: drained queues, and each key's steps in its node's log.
      const keys = new Map(result.acked.map((a) => [a.key, a]));
      keys.set(paused!.key, { alert: -1, source: 'alertmanager', node: NODES[0]!, key: paused!.key, queue: paused!.queue, by: old.version, at: 0 });
      const queues = NODES.map((n) => new Queue(nodeQueueName(n), { connection: admin, prefix: PREFIX }));
      try {
        await waitFor(
          'every acknowledged job to finish',
          async () => {
            const counts = await Promise.all(queues.map((q) => q.getJobCounts('active', 'wait', 'delayed', 'prioritized', 'waiting-children', 'paused')));
            return counts.every((c) => Object.values(c).every((v) => v === 0)) ? true : undefined;
          },
          120_000,
        );
        const states = await Promise.all(
          [...keys.values()].map(async (a) => {
            const q = queues[NODES.indexOf(a.node)]!;
            const job = await q.getJob(a.key);
            return { key: a.key, state: job ? await job.getState() : 'missing', failedReason: job?.failedReason };
          }),
        );
        const notCompleted = states.filter((s) => s.state !== 'completed');
        expect(notCompleted, 'acknowledged jobs that did not complete').toEqual([]);
      } finally {
        await Promise.all(queues.map((q) => q.close()));
      }

      const lines = effects();
      const byKeyStep = new Map<string, string[]>();
      for (const l of lines) {
        const [key, step, version] = l.split(' ');
        const k = `${key} ${step}`;
        byKeyStep.set(k, [...(byKeyStep.get(k) ?? []), version!]);
      }
      const doubled = [...byKeyStep].filter(([, v]) => v.length > 1);
      const residual = [...keys.values()].filter((a) => a.source === 'alertmanager').map((a) => a.key);
      const lost = residual.flatMap((k) => UPGRADE_STEPS.filter((s) => !byKeyStep.has(`${k} ${s}`)).map((s) => `${k} ${s}`));
      // The new runbook's jobs (stubs on the agents): each ran once, by a new agent.
      const ran = [...running, ...killed, ...stopped.map((s) => s.p)]
        .filter((p) => p.role === 'node-agent')
        .flatMap((p) => p.output().split('\n'))
        .filter((l) => l.startsWith('RAN readonly-filesystem-recovery '));
      const readonly = [...keys.values()].filter((a) => a.source === 'npd').map((a) => a.key);
      const ranReadonly = readonly.map((k) => ran.filter((l) => l.split(' ')[2] === k));
      const ranBy = (version: string, slice: string[]) => slice.filter((l) => l.endsWith(` ${version}`)).length;
      const window = NODES.flatMap((n, i) => effectsOf(n).slice(coexistence!.from[i], coexistence!.to[i]));
      log(
        `the job killed mid-way on ${old.version} (${paused!.key}) was finished by ${next.version}; ${keys.size} jobs acknowledged (${residual.length} residual-multipath-cleanup, ${readonly.length} readonly-filesystem-recovery), ${lines.length} steps taken (${ranBy(old.version, lines)} by ${old.version} agents, ${ranBy(next.version, lines)} by ${next.version}); while both ran: ${ranBy(old.version, window)} and ${ranBy(next.version, window)}`,
      );
      expect(result.acked.length).toBeGreaterThan(100);
      expect(result.gaveUp, 'sends no receiver acknowledged').toBe(0);
      expect(result.splitKeys, 'alerts two receivers made different jobs of').toEqual([]);
      expect(lost, 'acknowledged jobs whose steps never ran').toEqual([]);
      expect(doubled, 'steps that ran twice').toEqual([]);
      expect(lines.filter((l) => l.startsWith(`${paused!.key} `))).toEqual([
        `${paused!.key} ${UPGRADE_STEPS[0]} ${old.version}`,
        `${paused!.key} ${UPGRADE_STEPS[1]} ${next.version}`,
      ]);
      expect(readonly.length, 'jobs of the new runbook (NPD ReadonlyFilesystem to a new receiver)').toBeGreaterThan(0);
      expect(
        ranReadonly.filter((r) => r.length !== 1),
        'jobs of the new runbook not run exactly once',
      ).toEqual([]);
      expect(ranBy(old.version, window), `${old.version} agents' steps while both versions ran`).toBeGreaterThan(0);
      expect(ranBy(next.version, window), `${next.version} agents' steps while both versions ran`).toBeGreaterThan(0);
      // Each receiver version acknowledged alerts, and every old process left cleanly on SIGTERM.
      expect(new Set(result.acked.map((a) => a.by.split(' ')[0]))).toEqual(new Set([old.version, next.version]));
      expect(stopped.map(({ p, code }) => `${p.version} ${p.name}: ${code}`)).toEqual(stopped.map(({ p }) => `${p.version} ${p.name}: 0`));
    },
    15 * 60_000,
  );

  // Why the agents go first: the other order, shown. A 0.3.0 receiver turns NPD's
  // ReadonlyFilesystem condition into a readonly-filesystem-recovery job; a 0.2.0 agent cannot
  // read that runbook and fails the job, and the condition sent again (NPD repeats it) is the
  // same job, still failed, after that node's agent runs 0.3.0. A 0.3.0 agent runs such a job.
  it("shows why: a 0.2.0 agent fails a 0.3.0 receiver's job of a new runbook, and its key stays spent", async (ctx) => {
    if ('skip' in release) {
      console.log(`[rolling-upgrade] skipped: ${release.skip}`);
      ctx.skip();
      return;
    }
    const old: ReleaseCode = { version: PREVIOUS.version, root: release.root, previous: true };
    const next: ReleaseCode = { version: THIS_VERSION, root: THIS_TREE, previous: false };
    const shared: Shared = { redisUrl: redis.url, prefix: `${PREFIX}-order`, keysDir: TEST_KEYS_DIR, tokenFile: join(tokenDir, 'token') };
    const node = 'upgrade-ro';
    const root = mkdtempSync(join(tmpdir(), `vm-upgrade-host-${node}-`));
    hostRoots.set(node, root);
    const track = (p: FleetProcess): FleetProcess => {
      running.push(p);
      return p;
    };
    const receiver = track(await startReceiver(next, 'receiver', shared));
    let agent = track(await startNodeAgent(old, node, root, shared));
    const npd = (at: number) =>
      fetch(`${receiver.url}/v1/npd`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(readonlyCondition(node, 0, at)),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { accepted: { key: string; queue: string }[] } }));
    const queue = new Queue(nodeQueueName(node), { connection: admin, prefix: shared.prefix });
    try {
      const first = await npd(Date.UTC(2026, 11, 7, 9, 50, 1));
      expect(first.status).toBe(202);
      const key = first.body.accepted[0]!.key;
      expect(first.body.accepted[0]!.queue).toBe(nodeQueueName(node));
      const failed = await waitFor(
        `${key} to fail on the ${old.version} agent`,
        async () => {
          const j = await queue.getJob(key);
          return j && (await j.getState()) === 'failed' ? j : undefined;
        },
        60_000,
      );
      log(`${old.version} agent failed ${key}: ${failed.failedReason}`);
      expect(failed.data.runbook ?? failed.name).toMatch(/readonly-filesystem-recovery/);
      expect(agent.output()).not.toMatch(/^RAN /m);

      // The node's agent is upgraded; NPD sends the condition again: the same job, not run again.
      await agent.stop();
      agent = track(await startNodeAgent(next, node, root, shared));
      const again = await npd(Date.UTC(2026, 11, 7, 9, 50, 1));
      expect(again.status).toBe(202);
      expect(again.body.accepted.map((a) => a.key)).toEqual([key]);
      await sleep(3_000);
      expect(await (await queue.getJob(key))!.getState()).toBe('failed');
      expect(agent.output()).not.toMatch(/^RAN /m);

      // A 0.3.0 agent runs the same kind of job (a later condition, a new key).
      const later = await npd(Date.UTC(2026, 11, 7, 10, 20, 1));
      const laterKey = later.body.accepted[0]!.key;
      expect(laterKey).not.toBe(key);
      await waitFor(
        `${laterKey} to run on the ${next.version} agent`,
        async () => ((await (await queue.getJob(laterKey))?.getState()) === 'completed' ? true : undefined),
        60_000,
      );
      expect(agent.output()).toMatch(new RegExp(`^RAN readonly-filesystem-recovery ${laterKey} ${next.version}$`, 'm'));
    } finally {
      await queue.close();
    }
  });
});

function readLines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
