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
import { type Acked, type FlowResult, readonlyCondition, startWebhookFlow } from './support/webhook-flow.ts';

// Issue 48: a rolling upgrade under load. The previous release as published (chart 0.2.0: the
// commit test/int/deploy/chart-upgrade.int.test.ts pins) runs a fleet: two receiver replicas,
// the cluster worker, four node agents, with resolved-node alerts flowing from an Alertmanager HA
// pair (every fifth one an NPD ReadonlyFilesystem condition, a runbook only 0.3.0 has) and every
// alert a job that runs two destructive steps on its node. Its processes are then replaced one by
// one by this tree's while the alerts keep flowing, twice (each on a fresh fleet): in the order the
// CHANGELOG's 0.3.0 section documents ("Upgrade order: ...", the order one `helm upgrade` rolls:
// receivers first, node agents last), and agents first (0.2.0's advice); the first node's old
// agent is SIGKILLed in the middle of a job. Nothing acknowledged is lost, no step runs twice (the
// killed job's second step is taken by the new agent from the old one's journal), no job fails or
// is left behind, old and new agents both run jobs while they coexist, an alert sent to an old and
// a new receiver is one job, and every process replaced with SIGTERM exits 0. A new receiver
// holds a new-runbook signal for a node whose agent is still 0.2.0 (src/control/ingest/agent-gate.ts:
// answered 202, ignored `agent-too-old`, nothing stored), and the same signal sent again once the
// agent is upgraded makes its job, which the new agent runs.

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

/** What one `helm upgrade` does: the receivers' Deployment rolls first, the cluster worker's next, the DaemonSet's node by node last. */
const HELM_ORDER: readonly Role[] = ['receiver', 'cluster-worker', 'node-agent'];

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
  /** Every fake host made, removed at the end. */
  const hostDirs: string[] = [];
  const hostRoot = (name: string): string => {
    const d = mkdtempSync(join(tmpdir(), `vm-upgrade-host-${name}-`));
    hostDirs.push(d);
    return d;
  };
  const running: FleetProcess[] = [];

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
  }, 15 * 60_000);

  afterAll(async () => {
    await Promise.allSettled(running.map((p) => p.stop()));
    admin?.disconnect();
    await redis?.destroy();
    for (const d of [tokenDir, ...hostDirs]) if (d) rmSync(d, { recursive: true, force: true });
  });

  /**
   * One rolling upgrade of a fresh 0.2.0 fleet (its own prefix and fake hosts) in `order`, under
   * load: what the flow sent, acknowledged and was told was held, checked as the header says.
   */
  async function rollingUpgrade(name: string, order: readonly Role[]): Promise<FlowResult> {
    if ('skip' in release) throw new Error('no release');
    log(`${name}: ${order.join(' -> ')}`);
    const old: ReleaseCode = { version: PREVIOUS.version, root: release.root, previous: true };
    const next: ReleaseCode = { version: THIS_VERSION, root: THIS_TREE, previous: false };
    const prefix = `${PREFIX}-${order[0]}`;
    const shared: Shared = { redisUrl: redis.url, prefix, keysDir: TEST_KEYS_DIR, tokenFile: join(tokenDir, 'token') };
    const hostRoots = new Map<string, string>();
    for (const n of [...NODES, ENTRY_NODE]) hostRoots.set(n, hostRoot(`${order[0]}-${n}`));
    const stopped: { p: FleetProcess; code: number | null }[] = [];

    const t0 = Date.now();
    const receivers: FleetProcess[] = [];
    const agents = new Map<string, FleetProcess>();
    /** This fleet's processes (another scenario's ran the same alerts' jobs under its own prefix). */
    const mine: FleetProcess[] = [];
    const track = (p: FleetProcess): FleetProcess => {
      running.push(p);
      mine.push(p);
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
    /** When each node's new agent was up (a held answer after that, past the gate's memory of its absence, would be wrong). */
    const upgradedAt = new Map<string, number>();
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
          } else await retire(agents.get(n)!);
          agents.set(n, track(await startNodeAgent(next, n, hostRoots.get(n)!, shared)));
          upgradedAt.set(n, Date.now());
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
      `${result.sent} alerts sent twice, ${result.acked.length} sends acknowledged with a job, ${result.held.length} held (agent-too-old), ${result.retries} sends retried, ${result.gaveUp} given up, in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );

    // A held signal comes again once its node's agent is upgraded (NPD repeats its condition): now stored, and run.
    const heldAlerts = [...new Map(result.held.map((h) => [h.alert, h])).values()];
    const again: Acked[] = [];
    for (const h of heldAlerts) {
      const res = await fetch(`${receivers[0]!.url}/v1/${h.source}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: h.body,
      });
      expect(res.status).toBe(202);
      const answer = (await res.json()) as { accepted: { key: string; queue: string }[]; ignored: { reason: string }[] };
      expect(answer.ignored.map((i) => i.reason)).not.toContain('agent-too-old');
      for (const a of answer.accepted)
        again.push({ alert: h.alert, source: h.source, node: h.node, key: a.key, queue: a.queue, by: `${next.version} resend`, at: Date.now() });
    }

    // Every acknowledged job runs to its end: drained queues, and each key's steps in its node's log; none failed.
    const keys = new Map([...result.acked, ...again].map((a) => [a.key, a]));
    keys.set(paused!.key, { alert: -1, source: 'alertmanager', node: NODES[0]!, key: paused!.key, queue: paused!.queue, by: old.version, at: 0 });
    const queues = NODES.map((n) => new Queue(nodeQueueName(n), { connection: admin, prefix }));
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
      const failed = (await Promise.all(queues.map((q) => q.getFailed()))).flat().map((j) => `${j.id}: ${j.failedReason}`);
      expect(failed, 'jobs failed on any node queue').toEqual([]);
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
    const ran = mine
      .filter((p) => p.role === 'node-agent')
      .flatMap((p) => p.output().split('\n'))
      .filter((l) => l.startsWith('RAN readonly-filesystem-recovery '));
    const readonly = [...keys.values()].filter((a) => a.source === 'npd').map((a) => a.key);
    const ranReadonly = readonly.map((k) => ran.filter((l) => l.split(' ')[2] === k));
    const ranBy = (version: string, slice: string[]) => slice.filter((l) => l.endsWith(` ${version}`)).length;
    const window = NODES.flatMap((n, i) => effectsOf(n).slice(coexistence!.from[i], coexistence!.to[i]));
    log(
      `the job killed mid-way on ${old.version} (${paused!.key}) was finished by ${next.version}; ${keys.size} jobs acknowledged (${residual.length} residual-multipath-cleanup, ${readonly.length} readonly-filesystem-recovery, ${again.length} of them held signals sent again), ${lines.length} steps taken (${ranBy(old.version, lines)} by ${old.version} agents, ${ranBy(next.version, lines)} by ${next.version}); while both ran: ${ranBy(old.version, window)} and ${ranBy(next.version, window)}`,
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
    expect(
      ran.filter((l) => !l.endsWith(` ${next.version}`)),
      `new-runbook jobs an ${old.version} agent took`,
    ).toEqual([]);
    // Held only while the node's agent was old (the gate believes an upgraded agent within 2 s of its start), each saying why.
    expect(result.held.filter((h) => !/^node \S+'s agent does not run readonly-filesystem-recovery yet .*: not queued; /.test(h.detail))).toEqual([]);
    expect(result.held.filter((h) => (upgradedAt.get(h.node) ?? Number.POSITIVE_INFINITY) + 5_000 < h.at).map((h) => `${h.node} at ${h.at}`)).toEqual([]);
    expect(again.length, 'held signals sent again that made a job').toBe(heldAlerts.length);
    expect(ranBy(old.version, window), `${old.version} agents' steps while both versions ran`).toBeGreaterThan(0);
    expect(ranBy(next.version, window), `${next.version} agents' steps while both versions ran`).toBeGreaterThan(0);
    // Each receiver version acknowledged alerts, and every old process left cleanly on SIGTERM.
    expect(new Set(result.acked.map((a) => a.by.split(' ')[0]))).toEqual(new Set([old.version, next.version]));
    expect(stopped.map(({ p, code }) => `${p.version} ${p.name}: ${code}`)).toEqual(stopped.map(({ p }) => `${p.version} ${p.name}: 0`));
    // This fleet leaves the machine to the next scenario.
    const left = running.filter((p) => mine.includes(p));
    for (const p of left) running.splice(running.indexOf(p), 1);
    await Promise.allSettled(left.map((p) => p.stop()));
    return result;
  }

  it(
    'loses nothing, doubles nothing, fails nothing and leaves nothing stuck in the order one helm upgrade rolls (the documented one): receivers first, new-runbook signals held until their agent runs it',
    async (ctx) => {
      if ('skip' in release) {
        console.log(`[rolling-upgrade] skipped: ${release.skip}`);
        ctx.skip();
        return;
      }
      const order = documentedUpgradeOrder(CHANGELOG, THIS_VERSION);
      expect(order, 'the order the CHANGELOG documents is the one helm upgrade rolls').toEqual(HELM_ORDER);
      const result = await rollingUpgrade('as one helm upgrade rolls (documented)', order);
      expect(result.held.length, 'new-runbook signals held for 0.2.0 agents').toBeGreaterThan(0);
    },
    15 * 60_000,
  );

  it(
    "loses nothing, doubles nothing, fails nothing and holds nothing with the agents upgraded first (0.2.0's advice)",
    async (ctx) => {
      if ('skip' in release) {
        console.log(`[rolling-upgrade] skipped: ${release.skip}`);
        ctx.skip();
        return;
      }
      const result = await rollingUpgrade('agents first', ['node-agent', 'cluster-worker', 'receiver']);
      expect(result.held, 'signals held although every agent ran this release before any receiver did').toEqual([]);
    },
    15 * 60_000,
  );

  // The gate, one node at a time: a 0.3.0 receiver turns NPD's ReadonlyFilesystem condition into a
  // readonly-filesystem-recovery job, which a 0.2.0 agent would fail for good ("job data does not
  // match the catalogue") with its key spent, so the condition repeated after the upgrade would
  // find that failed job. The receiver holds it instead; the repeat after the upgrade makes it.
  it("holds a 0.3.0 receiver's new-runbook job from a 0.2.0 agent, and stores the repeated signal once the agent is upgraded", async (ctx) => {
    if ('skip' in release) {
      console.log(`[rolling-upgrade] skipped: ${release.skip}`);
      ctx.skip();
      return;
    }
    const old: ReleaseCode = { version: PREVIOUS.version, root: release.root, previous: true };
    const next: ReleaseCode = { version: THIS_VERSION, root: THIS_TREE, previous: false };
    const shared: Shared = { redisUrl: redis.url, prefix: `${PREFIX}-order`, keysDir: TEST_KEYS_DIR, tokenFile: join(tokenDir, 'token') };
    const node = 'upgrade-ro';
    const root = hostRoot(node);
    const track = (p: FleetProcess): FleetProcess => {
      running.push(p);
      return p;
    };
    const receiver = track(await startReceiver(next, 'receiver', shared));
    let agent = track(await startNodeAgent(old, node, root, shared));
    type Answer = { accepted: { key: string; queue: string }[]; ignored: { reason: string; detail: string }[] };
    const npd = (at: number) =>
      fetch(`${receiver.url}/v1/npd`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(readonlyCondition(node, 0, at)),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Answer }));
    const queue = new Queue(nodeQueueName(node), { connection: admin, prefix: shared.prefix });
    try {
      const first = await npd(Date.UTC(2026, 11, 7, 9, 50, 1));
      expect(first.status).toBe(202);
      expect(first.body.accepted).toEqual([]);
      expect(first.body.ignored).toEqual([
        {
          reason: 'agent-too-old',
          source: 'npd',
          detail: `node ${node}'s agent does not run readonly-filesystem-recovery yet (an older release, or none started yet): not queued; its own read-only scan finds this once it is upgraded`,
        },
      ]);
      log(`${next.version} receiver held the job for the ${old.version} agent: ${first.body.ignored[0]!.detail}`);
      await sleep(2_500);
      expect(await queue.getJobCounts('failed', 'wait', 'active', 'completed', 'delayed')).toEqual({ failed: 0, wait: 0, active: 0, completed: 0, delayed: 0 });
      expect(agent.output()).not.toMatch(/^RAN /m);

      // The node's agent is upgraded (it announces what it runs); NPD sends the condition again: now the job is stored and runs.
      await agent.stop();
      agent = track(await startNodeAgent(next, node, root, shared));
      await sleep(2_500);
      const again = await npd(Date.UTC(2026, 11, 7, 9, 50, 1));
      expect(again.status).toBe(202);
      expect(again.body.ignored).toEqual([]);
      const key = again.body.accepted[0]!.key;
      await waitFor(
        `${key} to run on the ${next.version} agent`,
        async () => ((await (await queue.getJob(key))?.getState()) === 'completed' ? true : undefined),
        60_000,
      );
      expect(agent.output()).toMatch(new RegExp(`^RAN readonly-filesystem-recovery ${key} ${next.version}$`, 'm'));
      expect(await queue.getFailedCount()).toBe(0);
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
