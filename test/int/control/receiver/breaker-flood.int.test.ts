import { Agent, request, type AgentOptions } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { BREAKER_SEAL_TTL_MS, BREAKER_SLOTS_PATH, breakerSubject } from '../../../../src/core/controls/breaker-wire.ts';
import { readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR } from '../../../support/trust.ts';
import { heapUsedAfterGc, startChild, type Child } from '../../../support/child.ts';

// Issue 44, item 2: POST /v1/agents/breakers is open to every pod (the NetworkPolicy admits any
// source on the receiver's port) and takes no credentials but the seal it checks. It used to
// derive and keep a work key for the node a request named before checking the seal, in a map that
// never shrank: ~1.1 KB of heap per refused request, a 384 MiB replica dead in minutes. Here a real
// receiver (a process of its own, with --expose-gc, so only its heap is measured) gets 30,000 asks
// with forged seals, each naming a node never named before, from 3,000 addresses (127.1.x.y: an
// attacker with many pods), 10 from each, so the failed-auth limiter answers none of them 429 and
// every one reaches the seal check; what the limiter keeps per address is measured too.

const ASKS = 30_000;
const WARM_UP = 3_000;
const BUDGET_BYTES = 16 * 1024 * 1024;
/** Asks from each address: under the failed-auth budget (AUTH_FAILURES_PER_MINUTE, 20), so none is answered 429. */
const PER_ADDRESS = 10;

/** A distinct loopback source address per index (Linux routes all of 127/8 to lo). */
const sourceOf = (base: number, i: number): string => `127.${base + Math.floor(i / 62_500)}.${1 + (Math.floor(i / 250) % 250)}.${1 + (i % 250)}`;

/** A node name nobody used before, as long as an attacker likes (a valid RFC 1123 subdomain). */
const freshNode = (tag: string, i: number): string => `${tag}-${i}.${'x'.repeat(60)}.${'y'.repeat(60)}`;

/** A seal of the right shape, fresh by the receiver's clock, with a MAC nobody computed. */
function forgedBody(node: string): string {
  const iat = Date.now();
  const mac = Buffer.from(`${node}-forged-mac-forged-mac-forged`).subarray(0, 32).toString('base64url');
  return JSON.stringify({
    ask: { op: 'reserve', node, jobId: 'j1', stepId: 'flush' },
    seal: { v: 1, iss: 'node-agent', kid: 'test', iat, exp: iat + BREAKER_SEAL_TTL_MS, mac },
  });
}

function post(port: number, body: string, agent: Agent | false, localAddress?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        ...(localAddress ? { localAddress } : {}),
        path: BREAKER_SLOTS_PATH,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * `addresses` x `perAddress` asks, `inFlight` connections at a time, each kept alive for its
 * address's asks (new connections cost the loaded test machine more than the asks); how many
 * got each status.
 */
async function flood(
  port: number,
  o: { addresses: number; perAddress: number; from: (a: number) => string; body: (i: number) => string },
  inFlight = 32,
): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let a = next++; a < o.addresses; a = next++) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: o.from(a) } as AgentOptions);
      try {
        for (let k = 0; k < o.perAddress; k++) {
          const status = await post(port, o.body(a * o.perAddress + k), agent);
          statuses[status] = (statuses[status] ?? 0) + 1;
        }
      } finally {
        agent.destroy();
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return statuses;
}

describe('unauthenticated breaker asks cannot run the receiver out of memory', () => {
  const prefix = uniquePrefix('flood');
  let receiver: Child;
  let url: URL;

  beforeAll(async () => {
    // The bench's receiver process (bench/servers/receiver.ts): the default configuration, with the test keys.
    receiver = startChild(
      new URL('../../../../bench/servers/receiver.ts', import.meta.url).pathname,
      { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn', SIGNING_KEYS_DIR: TEST_KEYS_DIR, KUBERNETES_SERVICE_HOST: '', KUBECONFIG: '' },
      { stdout: 'ignore', execArgv: ['--expose-gc'] },
    );
    url = new URL(await receiver.waitLine('READY '));
  });
  afterAll(async () => {
    await receiver?.kill();
    await dropPrefix(prefix);
  });

  it(`${ASKS} refused asks naming fresh nodes, from 3,000 addresses, leave under 16 MiB on its heap`, async () => {
    const port = Number(url.port);
    // The same kind of traffic first: what the first requests allocate for good (compiled code,
    // pools, the limiter's first generation) is not what this measures.
    const asks = (addresses: number, base: number, tag: string) => ({
      addresses,
      perAddress: PER_ADDRESS,
      from: (a: number) => sourceOf(base, a),
      body: (i: number) => forgedBody(freshNode(tag, i)),
    });
    expect(await flood(port, asks(WARM_UP / PER_ADDRESS, 200, 'warm'))).toEqual({ 403: WARM_UP });
    const before = await heapUsedAfterGc(receiver);
    const started = Date.now();
    const statuses = await flood(port, asks(ASKS / PER_ADDRESS, 1, 'flood'));
    const seconds = (Date.now() - started) / 1000;
    const grown = (await heapUsedAfterGc(receiver)) - before;
    process.stdout.write(
      `breaker flood: ${ASKS} asks in ${seconds.toFixed(1)} s, heap ${(before / 2 ** 20).toFixed(1)} MiB -> +${(grown / 2 ** 20).toFixed(2)} MiB (${Math.round(grown / ASKS)} B an ask)\n`,
    );
    // Every one reached the seal check and was refused there (none limited).
    expect(statuses).toEqual({ 403: ASKS });
    expect(grown).toBeLessThan(BUDGET_BYTES);
  }, 300_000);

  it("still takes an enrolled agent's slot afterwards", async () => {
    const root = readKeys(TEST_KEYS_DIR).get('node-agent.test')!;
    const q = nodeQueueName('flood-legit');
    const key = workKeyOf(root, 'node-agent', q);
    const sealer = sealerOf({ verify: new Map([['node-agent.test', key]]), signing: { role: 'node-agent', kid: 'test', key }, scope: q })!;
    const ask = { op: 'reserve', node: 'flood-legit', jobId: 'legit', stepId: 'flush' } as const;
    const body = JSON.stringify({ ask, seal: sealer.seal('breaker', breakerSubject(q), ask, BREAKER_SEAL_TTL_MS) });
    expect(await post(Number(url.port), body, false)).toBe(200);
  });
});
