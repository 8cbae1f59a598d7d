import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { controlKeys } from '../../../../src/core/controls/redis-keys.ts';
import type { UntrustedControl } from '../../../../src/core/controls/sealed-records.ts';
import { controlKeyring } from '../../../../src/core/trust/control-keys.ts';
import { readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf } from '../../../../src/core/trust/seal.ts';
import { sealJob } from '../../../../src/core/trust/work.ts';
import { workKeyOf } from '../../../../src/core/trust/work-keys.ts';
import { finishedExposition } from '../../../../src/adapters/stats/job-stats.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';
import { OperatorActions } from '../../../../src/control/actions/operator-actions.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { createJobControls } from '../../../../workers/engine/job-controls.ts';
import { ReceiverBreakers } from '../../../../workers/engine/receiver-breakers.ts';
import { testConfig } from '../../../support/config.ts';
import { writeControlKeys } from '../../../support/control-keys.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { TEST_KEYS_DIR, testSealer } from '../../../support/trust.ts';
import { waitFor } from '../../../support/wait.ts';
import { startOperators, type Operators } from '../../../testkit/operators.ts';
import { post } from '../../../testkit/payloads.ts';
import { rawQueue, type RawQueue } from '../../../support/raw-jobs.ts';
import { testJobs, type TestJobs } from '../../../testkit/jobs.ts';

// Issue 44, item 7: with the receiver's Redis password, the operator's earlier sealed enforce
// written back right after they set dry-run made an agent that was idle through the change run
// its next job in enforce (the record's seal was still valid, and the agent had never read the
// newer one). Now the receiver relays, in its answer to the agent's job-start ask (and to each
// destructive step's breaker ask), the newest sealed record it knows of each field the agent
// reads (src/core/controls/control-relay.ts): the copy put back is a replay to the agent too.
// A real receiver (enrolment with TokenReview on the wire fake of the API server, operators on
// the same fake), a real Redis, a real enrolled agent process (test/support/stub-agent.ts: its
// runbooks print the mode they were given).

const silent = createLogger('test', 'silent');
const NS = 'volume-medic';
const AGENT_SA = `${NS}/volume-medic-node-agent`;
const NODE = 'relay-b';
const RUNBOOK = 'residual-multipath-cleanup';
const DAY = 86_400_000;

const residual = (key: string): RemediationJob => ({
  version: 1,
  key,
  runbook: RUNBOOK,
  target: { node: NODE },
  evidence: [{ source: 'alertmanager', summary: 'KubeNodeNotReady resolved', raw: { n: 1 } }],
});

/** What `node`'s enrolled agent holds: its queue's node-agent work key. */
const nodeSealer = (node: string) => {
  const root = readKeys(TEST_KEYS_DIR).get('node-agent.test')!;
  const q = nodeQueueName(node);
  const key = workKeyOf(root, 'node-agent', q);
  return sealerOf({ verify: new Map([['node-agent.test', key]]), signing: { role: 'node-agent', kid: 'test', key }, scope: q })!;
};

describe("a control record put back from before the operator's change, against an agent that never read the change", () => {
  const prefix = uniquePrefix('relay');
  const keys = controlKeys(prefix);
  const files = writeControlKeys();
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'vm-relay-token-')), 'token');
  let ops: Operators;
  let receiver: Receiver;
  let redis: Redis;
  let queue: RawQueue;
  let jobs: TestJobs;
  let agent: ChildProcess | undefined;
  let out = '';
  let stateDir = mkdtempSync(join(tmpdir(), 'vm-relay-state-'));

  const api = async (path: string, body: unknown) => {
    const r = await post(`${receiver.url}${path}`, body, ops.token('alice'));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
  };
  const setMode = (runbook: string, mode: 'enforce' | 'dry-run' | 'default', why: string) => api('/v1/modes', { runbook, mode, why });

  const startAgent = async (): Promise<void> => {
    out = '';
    agent = spawn(process.execPath, ['test/support/stub-agent.ts'], {
      env: {
        ...process.env,
        REDIS_URL: redisUrl(),
        QUEUE_PREFIX: prefix,
        NODE_NAME: NODE,
        STATE_DIR: stateDir,
        ENROL_URL: receiver.url,
        ENROL_TOKEN_FILE: tokenFile,
        CONTROL_VERIFY_CERT_FILE: files.certFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    agent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await waitFor('the agent to enrol and start', async () => (out.includes('READY') ? true : undefined), 20_000);
  };
  const stopAgent = async (): Promise<void> => {
    const a = agent;
    agent = undefined;
    if (!a || a.exitCode !== null) return;
    const exited = new Promise((resolve) => a.once('exit', resolve));
    a.kill('SIGTERM');
    await exited;
  };

  let n = 0;
  /** A job the receiver sealed for NODE, put on its queue; resolves with the mode the agent ran it in, or its parking. */
  const runJob = async (until: 'ran' | 'parked' = 'ran'): Promise<string> => {
    n += 1;
    const id = `relay-${n}`;
    await queue.add(RUNBOOK, sealJob(testSealer('receiver'), queue.name, residual(id), DAY), { jobId: id });
    if (until === 'parked')
      return waitFor(
        `job ${id} to park`,
        async () => {
          const j = await jobs.get(queue.name, id);
          const parked = (j?.progress as { parked?: { reason: string; why: string } } | undefined)?.parked;
          return parked ? `${parked.reason}: ${parked.why}` : undefined;
        },
        15_000,
      );
    return waitFor(`job ${id} to run`, async () => new RegExp(`^RAN ${RUNBOOK} ${id} (\\S+)$`, 'm').exec(out)?.[1], 15_000);
  };

  beforeAll(async () => {
    ops = await startOperators();
    ops.api.addAgentPod('token-relay-b', { serviceAccount: AGENT_SA, pod: 'agent-relay-b', uid: 'uid-relay-b', node: NODE });
    writeFileSync(tokenFile, 'token-relay-b\n');
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        enrolNodeAgents: [AGENT_SA],
        controlSigningKeyFile: files.keyFile,
        controlVerifyCertFile: files.certFile,
        breakerStormNodes: 0,
      }),
      { operatorKubeConfig: ops.api.kubeConfig(), log: silent },
    );
    redis = new Redis(redisUrl());
    queue = rawQueue(redis, prefix, nodeQueueName(NODE));
    jobs = testJobs(redis, prefix);
    await startAgent();
  });
  afterAll(async () => {
    await stopAgent();
    await queue?.close();
    await jobs?.close();
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  const field = `runbook/${RUNBOOK}`;
  let copied: string | null;

  it("the enforce record put back right after the operator set dry-run does not run the idle agent's next job in enforce", async () => {
    await setMode(RUNBOOK, 'enforce', 'INC-7 verified');
    copied = await redis.hget(keys.modes, field);
    expect(await runJob()).toBe('enforce');
    // The operator changes their mind; at once, as the receiver's Redis user, the earlier record goes back.
    await setMode(RUNBOOK, 'dry-run', 'hands off, wrong LUN');
    await redis.hset(keys.modes, field, copied!);
    // The agent read nothing since its last job: Redis alone says enforce, with a valid seal.
    expect(await runJob()).toBe('dry-run');
    expect(await finishedExposition(redis, prefix)).toMatch(/volume_medic_untrusted_refused_total\{kind="mode",reason="replayed"\} [1-9]/);
    expect(await receiverAudit()).toContainEqual(
      expect.objectContaining({
        action: 'control-refused',
        target: `mode/${field}`,
        by: NODE,
        why: expect.stringMatching(/^replayed: generation \d+ is older than \d+/),
      }),
    );
  });

  it('nor after the agent restarts (its STATE_DIR kept), the copy still in Redis', async () => {
    await stopAgent();
    await startAgent();
    expect(await runJob()).toBe('dry-run');
    expect(await redis.hget(keys.modes, field)).toBe(copied);
  });

  it('nor for a brand-new agent (a wiped STATE_DIR), which never read a control: the relay is all it has', async () => {
    await stopAgent();
    rmSync(stateDir, { recursive: true, force: true });
    stateDir = mkdtempSync(join(tmpdir(), 'vm-relay-state-'));
    await startAgent();
    expect(await runJob()).toBe('dry-run');
    expect(await redis.hget(keys.modes, field)).toBe(copied);
  });

  it("a lifted pause put back after the operator paused the cluster does not let the idle agent's job start", async () => {
    // Never paused: the resume still writes its sealed tombstone.
    await api('/v1/resume', { why: 'all clear' });
    const lifted = await redis.hget(keys.pause, 'cluster');
    expect(JSON.parse(lifted!)).toMatchObject({ cleared: true });
    await api('/v1/pause', { why: 'storage vendor on site' });
    await redis.hset(keys.pause, 'cluster', lifted!);
    expect(await runJob('parked')).toMatch(/^paused: cluster-wide pause by alice/);
    await api('/v1/resume', { why: 'vendor gone' });
  });

  it("the operator's own change from dry-run to enforce is honoured at the next job", async () => {
    await setMode(RUNBOOK, 'enforce', 'INC-7 again, the right LUN');
    expect(await runJob()).toBe('enforce');
    await setMode(RUNBOOK, 'dry-run', 'done');
    expect(await runJob()).toBe('dry-run');
    await setMode(RUNBOOK, 'enforce', 'INC-8');
    expect(await runJob()).toBe('enforce');
  });

  it('a receiver that does not answer leaves the agent as before the relay: its enforce job waits for the storm breaker to count it', async () => {
    await receiver.close();
    expect(await runJob('parked')).toMatch(/^breaker: this start could not be counted towards the storm breaker: the receiver's breakers at .* did not answer/);
  });

  /** The audit trail as the receiver's store reads it (every queue's list). */
  const receiverAudit = async () => {
    const store = new OperatorActions({
      redis,
      prefix,
      jobs: {
        promote: () => {
          throw new Error('unused');
        },
      },
      caps: { nodePerHour: 0, clusterPerHour: 0, stormNodes: 0, stormWindowMs: 1000 },
      approvalTtlMs: 3_600_000,
      configuredModes: { default: 'dry-run', runbooks: {} },
    }).store;
    return store.auditLog(200);
  };
});

describe("a record put back while a job runs, before its destructive step: the step's breaker answer relays the newer one", () => {
  const prefix = uniquePrefix('relaystep');
  const keys = controlKeys(prefix);
  const files = writeControlKeys();
  const node = 'relay-step';
  const book = 'local-pv-placeholder';
  const field = `runbook/${book}`;
  let ops: Operators;
  let receiver: Receiver;
  let redis: Redis;
  const refused: UntrustedControl[] = [];

  beforeAll(async () => {
    ops = await startOperators();
    receiver = await startReceiver(
      testConfig({
        redisUrl: redisUrl(),
        queuePrefix: prefix,
        enrolNodeAgents: [AGENT_SA],
        controlSigningKeyFile: files.keyFile,
        controlVerifyCertFile: files.certFile,
        breakerStormNodes: 0,
      }),
      { operatorKubeConfig: ops.api.kubeConfig(), log: silent },
    );
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await receiver?.close();
    await ops?.close();
    await dropPrefix(prefix);
    redis?.disconnect();
  });

  const setMode = async (mode: 'enforce' | 'dry-run', why: string) => {
    const r = await post(`${receiver.url}/v1/modes`, { runbook: book, mode, why }, ops.token('alice'));
    expect(r.status).toBe(200);
  };
  /** The enrolled agent's job controls, as createNodeAgent wires them, the receiver taking its slots. */
  const controls = () =>
    createJobControls({
      redis,
      prefix,
      approval: { highRisk: false, runbooks: [], maxDestructiveSteps: 0 },
      approvalTtlMs: 60_000,
      caps: { nodePerHour: 100, clusterPerHour: 100, stormNodes: 0, stormWindowMs: 60_000 },
      recheckMs: 1_000,
      queue: nodeQueueName(node),
      node,
      log: silent,
      trust: { ring: controlKeyring(files.certFile), allowUnsigned: false, onUntrusted: (u) => refused.push(u) },
      breakers: new ReceiverBreakers({ url: receiver.url, queue: nodeQueueName(node), sealer: nodeSealer(node) }),
    });
  const step = { id: 'attach-loop', description: 'losetup', destructive: true, evidence: [] };
  const plan = { summary: 'toy', steps: [step] };
  const begin = (c: ReturnType<typeof controls>, id: string) =>
    c.begin({ jobId: id, queue: nodeQueueName(node), runbook: book, createdAt: Date.now(), configuredMode: 'dry-run' });

  it('stops before the destructive step: the mode is dry-run, the copy in Redis a replay', async () => {
    await setMode('enforce', 'INC-9');
    const copied = await redis.hget(keys.modes, field);
    const c = controls();
    const begun = await begin(c, 'step-1');
    expect(begun.mode).toBe('enforce');
    // Mid-job: dry-run set, and at once the earlier enforce written back before the agent's next read.
    await setMode('dry-run', 'stop');
    await redis.hset(keys.modes, field, copied!);
    await expect(begun.gate.beforeStep(step as never, plan as never)).rejects.toThrow(
      /stopped before destructive step attach-loop: the mode is now dry-run \(runbook local-pv-placeholder dry-run set by alice .*\(stop\)\)/,
    );
    expect(refused).toContainEqual(expect.objectContaining({ kind: 'mode', field, reason: 'replayed' }));
  });

  it("the operator's enforce, standing, lets the step run", async () => {
    await setMode('enforce', 'INC-10');
    const begun = await begin(controls(), 'step-2');
    expect(begun.mode).toBe('enforce');
    expect(await begun.gate.beforeStep(step as never, plan as never)).toEqual({ go: true });
  });
});
