import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../src/control/receiver.ts';
import { startPrivateRedis, type PrivateRedis } from '../support/redis-server.ts';
import { testConfig } from '../support/config.ts';
import { alertmanagerBody, nodeNotReadyAlert, post } from '../testkit/payloads.ts';
import { uniquePrefix } from '../support/redis.ts';
import { waitFor } from '../support/wait.ts';
import { ranCounts as runsOf, startStubAgent, type StubAgent } from '../support/stub-runs.ts';
import { setTimeout as sleep } from 'node:timers/promises';

// Every connection of the receiver and of a node agent is cut while webhooks keep coming: each
// receiver connection killed with CLIENT KILL, each ended as ioredis ends a connection it gives
// up on, the agent's connections killed, and Redis restarted (an fsynced AOF: it keeps what it
// stored). The receiver waits for a replica's acknowledgement (REDIS_ACK_REPLICAS=1) as on
// Sentinel. After each cut, 202s must resume within a few seconds; at the end every incident
// answered 202 ran exactly once, and senders only ever saw 202 or 503.

const TOKEN = 'faults-connections-token-0123456789';
const NODE = 'conn-node';
const RESUME_MS = 5_000;

/** CLIENT KILL of every client whose name passes `which`; how many were killed. */
async function killClients(admin: Redis, which: (name: string) => boolean): Promise<number> {
  const ids = String(await admin.client('LIST'))
    .split('\n')
    .map((l) => ({ id: /^id=(\d+)/.exec(l)?.[1], name: / name=(\S*) /.exec(l)?.[1] ?? '' }))
    .filter((c) => c.id && which(c.name));
  for (const c of ids) await admin.client('KILL', 'ID', c.id!).catch(() => 0);
  return ids.length;
}

describe('every Redis connection cut in turn under a storm of webhooks', () => {
  let primary: PrivateRedis;
  let replica: PrivateRedis;
  let receiver: Receiver;
  let agent: StubAgent;
  let admin: Redis;
  const prefix = uniquePrefix('fault-conns');
  const stateDir = mkdtempSync(join(tmpdir(), 'vm-fault-conns-'));

  beforeAll(async () => {
    primary = await startPrivateRedis({ persistent: true });
    replica = await startPrivateRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    admin = new Redis(primary.url, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    await waitFor('the replica in sync', async () => (/connected_slaves:1/.test(String(await admin.info('replication'))) ? true : undefined));
    receiver = await startReceiver(
      testConfig({
        redisUrl: primary.url,
        queuePrefix: prefix,
        tokens: [TOKEN],
        redisAckReplicas: 1,
        redisAckTimeoutMs: 500,
        enqueueTimeoutMs: 3_000,
      }),
    );
    agent = await startStubAgent({
      REDIS_URL: primary.url,
      QUEUE_PREFIX: prefix,
      NODE_NAME: NODE,
      STATE_DIR: stateDir,
      LOCK_DURATION_MS: '2000',
    });
  }, 60_000);
  afterAll(async () => {
    agent?.kill();
    await receiver?.close();
    admin?.disconnect();
    await replica?.destroy();
    await primary?.destroy();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const ranCounts = (): Map<string, number> => runsOf(agent.out());

  it('202s resume within a few seconds after each cut; every job answered 202 runs exactly once', async () => {
    const statuses = new Map<number, number>();
    const accepted = new Map<number, string>();
    let last202 = 0;
    let next = 0;
    let stopAt = Number.POSITIVE_INFINITY;
    const sender = async (): Promise<void> => {
      while (Date.now() < stopAt) {
        const i = next++;
        for (;;) {
          const sent = Date.now();
          const r = await post(`${receiver.url}/v1/alertmanager`, alertmanagerBody([nodeNotReadyAlert(NODE, 'resolved', `cut${i}`)]), TOKEN).catch(() => ({
            status: 0,
            json: undefined,
          }));
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 202) {
            accepted.set(i, r.json.accepted[0].id);
            last202 = Math.max(last202, sent);
            break;
          }
          if (r.status !== 503 || Date.now() >= stopAt) break;
          await sleep(200);
        }
        await sleep(100);
      }
    };
    const senders = Array.from({ length: 4 }, () => sender());
    try {
      await waitFor('jobs running', async () => (ranCounts().size >= 5 ? true : undefined), 15_000);
      // After a restart the replica needs a full resync before it can acknowledge anything, and
      // the primary holds a diskless sync back by repl-diskless-sync-delay (5 s by default) to
      // gather replicas: that much longer for that cut.
      const syncDelayMs = 1000 * Number(((await admin.config('GET', 'repl-diskless-sync-delay')) as string[])[1] ?? 0);
      const cuts: [string, () => Promise<unknown>, number?][] = [
        ['CLIENT KILL of the replica-acknowledgement connection', () => killClients(admin, (n) => n === 'volume-medic:receiver:replica-ack')],
        ['CLIENT KILL of the producer connection', () => killClients(admin, (n) => n === 'volume-medic:receiver:producer')],
        ['the replica-acknowledgement connection ended (ioredis gave up on it)', async () => receiver.connections.get('replica-ack')!.disconnect()],
        ['the producer connection ended (ioredis gave up on it)', async () => receiver.connections.get('producer')!.disconnect()],
        [
          "CLIENT KILL of every node agent connection (its own and BullMQ's blocking one)",
          () => killClients(admin, (n) => n.startsWith('volume-medic:node-agent.') || n.startsWith('bull:')),
        ],
        [
          'Redis restarted',
          async () => {
            await primary.stop();
            await primary.start();
          },
          syncDelayMs,
        ],
      ];
      const resumed: string[] = [];
      for (const [what, cut, extraMs = 0] of cuts) {
        const ranBefore = ranCounts().size;
        const killed = await cut();
        if (typeof killed === 'number') expect(killed, what).toBeGreaterThan(0);
        // From the end of the cut (a restarted Redis answers again): a webhook sent after it got 202.
        const t0 = Date.now();
        await waitFor(`a 202 after: ${what}`, async () => (last202 > t0 ? true : undefined), RESUME_MS + extraMs).catch(async (err: Error) => {
          const ready = await (await fetch(`${receiver.url}/readyz`)).text();
          throw new Error(`${err.message}; /readyz: ${ready}; replica: ${String(await new Redis(replica.url).info('replication')).replace(/\r\n/g, ' ')}`);
        });
        // And the agent runs new work after it (its connections came back too).
        await waitFor(`a job run after: ${what}`, async () => (ranCounts().size > ranBefore ? true : undefined), 15_000);
        resumed.push(`${what}: ${last202 - t0} ms`);
        await sleep(500);
      }
      console.log(`202s resumed after each cut:\n  ${resumed.join('\n  ')}`);
      // Nothing is left ended; replacements were counted for the two ended connections.
      const states = receiver.connections.states();
      expect(states.every((s) => s.ready)).toBe(true);
      expect(states.map((s) => [s.name, s.replacements])).toEqual([
        ['producer', 1],
        ['replica-ack', 1],
      ]);
      const metrics = await (await fetch(`${receiver.url}/metrics`)).text();
      expect(metrics).toMatch(/volume_medic_redis_connection_replacements_total\{connection="replica-ack"\} 1/);
      expect(metrics).toMatch(/volume_medic_replica_ack_ok 1/);
    } finally {
      stopAt = 0;
      await Promise.allSettled(senders);
    }
    const ids = [...accepted.values()];
    await waitFor('every accepted job ran', async () => (ids.every((id) => ranCounts().has(id)) ? true : undefined), 20_000).catch((err: Error) => {
      throw new Error(`${err.message}; not run: ${ids.filter((id) => !ranCounts().has(id)).join(', ')}`);
    });
    // Two lock durations more: a job a cut left active must not run a second time.
    await sleep(4_500);
    const twice = [...ranCounts()].filter(([, n]) => n !== 1).map(([id]) => id);
    expect(twice, 'jobs that ran more than once').toEqual([]);
    expect([...statuses.keys()].filter((s) => s !== 202 && s !== 503)).toEqual([]);
    console.log(`${accepted.size} incidents answered 202, ${statuses.get(503) ?? 0} answers 503, ${ranCounts().size} jobs ran, each once`);
  });
});
