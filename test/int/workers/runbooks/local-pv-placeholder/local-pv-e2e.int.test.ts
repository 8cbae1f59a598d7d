import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../../../../../src/control/receiver.ts';
import { InMemoryLookups } from '../../../../../src/adapters/kube/lookups.ts';
import type { Mode } from '../../../../../src/core/catalogue/result.ts';
import { createLogger } from '../../../../../src/adapters/observability/logger.ts';
import { createNodeAgent } from '../../../../../workers/node-agent/agent.ts';
import { createRealHost } from '../../../../../workers/host/real-host.ts';
import { parseLosetupList } from '../../../../../workers/runbooks/local-pv-placeholder/loops.ts';
import { createLocalPvPlaceholder } from '../../../../../workers/runbooks/local-pv-placeholder/handler.ts';
import { DEFAULT_OPT_IN_LABEL, InMemoryNodeLabels } from '../../../../../workers/runbooks/local-pv-placeholder/node-labels.ts';
import { testConfig } from '../../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../../support/redis.ts';
import { getJson, post } from '../../../../testkit/payloads.ts';

// Issue 4 end to end: a kubelet "not a device node" Event posted to the receiver becomes a job
// on the node's queue, the node agent runs the placeholder runbook on REAL loop devices (under a
// temporary host root), and the job's result shows the placeholder. In dry-run the same flow
// changes nothing and shows the plan.

const NODE = 'e2e-node';
const STATE_DIR = '/var/lib/volume-medic';
let root = '';
let receiver: Receiver;
const prefix = uniquePrefix('lpv-e2e');

// The pod of the Event uses both PVs through its claims: a Pod's Event makes a job only then.
const lookups = new InMemoryLookups([
  {
    name: 'local-pv-enforce',
    volumeMode: 'Block',
    local: { path: '/dev/disk/by-id/wwn-0x5000c500e2e00001', node: NODE },
    claim: { namespace: 'db', name: 'data-enforce' },
  },
  {
    name: 'local-pv-dryrun',
    volumeMode: 'Block',
    local: { path: '/dev/disk/by-id/wwn-0x5000c500e2e00002', node: NODE },
    claim: { namespace: 'db', name: 'data-dryrun' },
  },
])
  .addPod({ namespace: 'db', name: 'pg-0', node: NODE, phase: 'Pending', claims: ['data-enforce', 'data-dryrun'], waiting: [] })
  .addClaim({ namespace: 'db', name: 'data-enforce', volumeName: 'local-pv-enforce', accessModes: ['ReadWriteOnce'] })
  .addClaim({ namespace: 'db', name: 'data-dryrun', volumeName: 'local-pv-dryrun', accessModes: ['ReadWriteOnce'] });

function notADeviceNode(pv: string, uid: string) {
  return {
    metadata: { name: `pg-0.${uid}`, namespace: 'db', uid },
    involvedObject: { kind: 'Pod', namespace: 'db', name: 'pg-0', uid: '3b0f7a2e', fieldPath: 'spec.containers{postgres}' },
    reason: 'Failed',
    message: `Error: failed to generate container "4f1c" spec: failed to generate spec: error gathering device information while adding custom device "/var/lib/kubelet/pods/3b0f7a2e/volumeDevices/kubernetes.io~local-volume/${pv}": not a device node`,
    source: { component: 'kubelet', host: NODE },
    type: 'Warning',
    count: 1,
    clusterName: 'e2e',
  };
}

function detachOurs(): void {
  const out = execFileSync('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  for (const a of parseLosetupList(out)) {
    if (root && a.backFile?.startsWith(`${root}/`)) execFileSync('losetup', ['-d', `/dev/${a.loop}`]);
  }
}

async function runThrough(pv: string, uid: string, mode: Mode): Promise<any> {
  const r = await post(`${receiver.url}/v1/events`, notADeviceNode(pv, uid));
  expect(r.status).toBe(202);
  expect(r.json.accepted).toEqual([expect.objectContaining({ runbook: 'local-pv-placeholder', queue: `vm-node-{${NODE}}`, node: NODE })]);
  const config = testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, nodeName: NODE, runbookModes: { 'local-pv-placeholder': mode } });
  const agent = createNodeAgent({
    config,
    log: createLogger('e2e', 'silent'),
    registry: {
      'local-pv-placeholder': createLocalPvPlaceholder({
        host: createRealHost({ root }),
        stateDir: STATE_DIR,
        nodeLabels: new InMemoryNodeLabels({ [NODE]: { [DEFAULT_OPT_IN_LABEL.key]: DEFAULT_OPT_IN_LABEL.value } }),
      }),
    },
  });
  try {
    const id = r.json.accepted[0].id;
    for (let i = 0; i < 200; i++) {
      const job = await getJson(`${receiver.url}/v1/jobs/${id}`);
      if (job.state === 'completed' || job.state === 'failed') return job;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('job did not finish');
  } finally {
    await agent.close();
  }
}

describe('a "not a device node" Event, end to end on real loop devices', () => {
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'vm-lpv-e2e-'));
    await mkdir(join(root, 'dev/disk/by-id'), { recursive: true });
    await mkdir(join(root, 'sys/block'), { recursive: true });
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix, operatorAuth: 'insecure' }), { lookups });
  });
  afterEach(() => detachOurs());
  afterAll(async () => {
    detachOurs();
    await receiver?.close();
    await dropPrefix(prefix);
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('in enforce mode gives the PV a 512-byte loop placeholder and the job result shows it', async () => {
    const link = '/dev/disk/by-id/wwn-0x5000c500e2e00001';
    const job = await runThrough('local-pv-enforce', 'e2e-uid-1', 'enforce');
    expect(job.state).toBe('completed');
    expect(job.target).toEqual({ node: NODE, pv: 'local-pv-enforce', path: link });
    expect(job.result).toMatchObject({ runbook: 'local-pv-placeholder', mode: 'enforce', outcome: 'succeeded', ranOn: NODE });
    const target = await readlink(join(root, link));
    expect(target).toMatch(/^\/dev\/loop\d+$/);
    expect(Number(target.slice('/dev/loop'.length))).toBeGreaterThanOrEqual(101);
    expect(execFileSync('blockdev', ['--getsize64', target], { encoding: 'utf8' }).trim()).toBe('512');
    const argvs = job.result.commands.map((c: { argv: string[] }) => c.argv.join(' '));
    expect(argvs.some((a: string) => a.startsWith('losetup') && a.includes(target))).toBe(true);
  });

  it('in dry-run changes nothing and shows the plan', async () => {
    const link = '/dev/disk/by-id/wwn-0x5000c500e2e00002';
    const job = await runThrough('local-pv-dryrun', 'e2e-uid-2', 'dry-run');
    expect(job.state).toBe('completed');
    expect(job.result).toMatchObject({ mode: 'dry-run', outcome: 'planned' });
    expect(job.result.plan.steps.length).toBeGreaterThan(0);
    expect(job.result.steps.every((s: { status: string }) => s.status === 'would-run')).toBe(true);
    expect(existsSync(join(root, link))).toBe(false);
    // Other test files attach loop devices concurrently; ours are those backed by files under our
    // root, and the enforce test's was detached after it.
    const after = execFileSync('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { encoding: 'utf8' });
    expect(parseLosetupList(after).filter((a) => a.backFile?.startsWith(`${root}/`))).toEqual([]);
  });
});
