import { mkdtempSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { BREAKER_SEAL_TTL_MS, BREAKER_SLOTS_PATH, breakerSubject } from '../../../../src/core/controls/breaker-wire.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { ReceiverBreakers } from '../../../../workers/engine/receiver-breakers.ts';
import { postToReceiver, receiverAgent } from '../../../../workers/engine/receiver-http.ts';
import { testConfig } from '../../../support/config.ts';
import { receiverTlsFiles } from '../../../support/receiver-tls-files.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';

// Issue 48: in a storm every enrolled agent asks the receiver for its breaker slot at once. Over
// HTTPS a new connection per ask costs a TCP and a TLS handshake on both ends, more than the ask
// (bench/README.md, "The enrolled storm"); so an agent keeps its connection to the receiver
// (receiverAgent) and the receiver keeps it open HTTP_KEEP_ALIVE_SECONDS, longer than Node's 5 s.
// Each ask is still sealed and checked on its own: a kept connection proves nothing about the next ask.

const silent = createLogger('test', 'silent');

const nodeSealer = (n: string) => {
  const root = readKeys(TEST_KEYS_DIR).get('node-agent.test')!;
  const q = nodeQueueName(n);
  const key = workKeyOf(root, 'node-agent', q);
  return sealerOf({ verify: new Map([['node-agent.test', key]]), signing: { role: 'node-agent', kid: 'test', key }, scope: q })!;
};

/** New TCP connections and TLS handshakes the server has seen. */
function countConnections(server: Server): { connections: number; handshakes: number } {
  const c = { connections: 0, handshakes: 0 };
  server.on('connection', () => c.connections++);
  server.on('secureConnection', (_s: TLSSocket) => c.handshakes++);
  return c;
}

describe("an agent's asks to the receiver over one kept HTTPS connection", () => {
  const prefix = uniquePrefix('kept');
  const k = controlKeys(prefix);
  const tls = receiverTlsFiles(mkdtempSync(join(tmpdir(), 'vm-kept-')));
  const ca = readFileSync(tls.ca);
  let receiver: Receiver;
  let redis: Redis;
  let seen: { connections: number; handshakes: number };

  beforeAll(async () => {
    redis = new Redis(redisUrl());
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        operatorAuth: 'off',
        tlsCertFile: tls.cert,
        tlsKeyFile: tls.key,
        // Shorter than the idle wait below: a kept connection waiting for its next request is not a slow sender.
        httpHeadersTimeoutMs: 1_000,
        httpRequestTimeoutMs: 2_000,
        breakerStormWindowSeconds: 60,
      }),
      { log: silent },
    );
    seen = countConnections(receiver.server);
  });
  afterAll(async () => {
    await receiver?.close();
    redis?.disconnect();
    await dropPrefix(prefix);
  });

  it('announces how long it keeps an idle connection: HTTP_KEEP_ALIVE_SECONDS, 40 min by default', async () => {
    const r = await new Promise<string | undefined>((resolve, reject) => {
      const agent = receiverAgent('https:');
      void import('node:https').then(({ request }) =>
        request(new URL('/healthz', receiver.url), { ca, agent }, (res) => {
          res.resume();
          res.on('end', () => {
            agent.destroy();
            resolve(String(res.headers['keep-alive']));
          });
        })
          .on('error', reject)
          .end(),
      );
    });
    expect(r).toBe('timeout=2400');
  });

  it("takes node A's starts over one connection and one TLS handshake, even after more than Node's 5 s idle", async () => {
    const agent = receiverAgent('https:');
    const a = new ReceiverBreakers({ url: receiver.url, caFile: tls.ca, queue: nodeQueueName('kept-a'), sealer: nodeSealer('kept-a'), agent });
    const before = { ...seen };
    await a.recordNodeActivity({ nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1 }, 'kept-a');
    await a.recordNodeActivity({ nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1 }, 'kept-a');
    expect({ connections: seen.connections - before.connections, handshakes: seen.handshakes - before.handshakes }).toEqual({ connections: 1, handshakes: 1 });
    await sleep(6_000);
    await a.reserveDestructive({ nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1 }, { node: 'kept-a', jobId: 'j1', stepId: 's1' });
    expect({ connections: seen.connections - before.connections, handshakes: seen.handshakes - before.handshakes }).toEqual({ connections: 1, handshakes: 1 });
    expect(await redis.zscore(k.storm, 'kept-a')).not.toBeNull();
    expect(await redis.zcard(k.destructiveNode('kept-a'))).toBe(1);
    agent.destroy();
  }, 20_000);

  it("refuses, on A's kept connection, an ask A sealed for node B: each ask is checked on its own", async () => {
    const agent = receiverAgent('https:');
    const a = new ReceiverBreakers({ url: receiver.url, caFile: tls.ca, queue: nodeQueueName('kept-a'), sealer: nodeSealer('kept-a'), agent });
    await a.recordNodeActivity({ nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1 }, 'kept-a');
    const before = { ...seen };
    const ask = { op: 'activity', node: 'kept-b' } as const;
    const forged = await postToReceiver({
      url: new URL(BREAKER_SLOTS_PATH, receiver.url),
      body: JSON.stringify({ ask, seal: nodeSealer('kept-a').seal('breaker', breakerSubject(nodeQueueName('kept-a')), ask, BREAKER_SEAL_TTL_MS) }),
      ca,
      agent,
      timeoutMs: 5_000,
      maxBytes: 64 * 1024,
    });
    expect(forged.status).toBe(403);
    expect(seen.connections - before.connections).toBe(0);
    expect(await redis.zscore(k.storm, 'kept-b')).toBeNull();
    agent.destroy();
  });
});
