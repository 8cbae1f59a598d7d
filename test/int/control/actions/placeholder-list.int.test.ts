import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeholderReportKey, writePlaceholderReport } from '../../../../src/adapters/jobstore/placeholder-reports.ts';
import { knownQueuesKey } from '../../../../src/adapters/redis/known-queues.ts';
import { presenceKey } from '../../../../src/adapters/jobstore/agent-presence.ts';
import type { PlaceholderReport, ReportedPlaceholder } from '../../../../src/core/catalogue/placeholder-report.ts';
import { nodeQueueName } from '../../../../src/core/catalogue/queues.ts';
import { run } from '../../../../src/control/cli/main.ts';
import { apiClient } from '../../../../src/control/cli/api-client.ts';
import { uninstallCheck } from '../../../../src/control/cli/placeholder-commands.ts';
import { UNINSTALL_MARK_TTL_MS, uninstallMarked, uninstallMarkKey } from '../../../../src/adapters/jobstore/uninstall-mark.ts';
import { startReceiver, type Receiver } from '../../../../src/control/receiver.ts';
import { testConfig } from '../../../support/config.ts';
import { dropPrefix, redisUrl, uniquePrefix } from '../../../support/redis.ts';
import { testJobs } from '../../../testkit/jobs.ts';
import { getJson } from '../../../testkit/payloads.ts';
import { startOperators, VIEWERS, type Operators } from '../../../testkit/operators.ts';

// The placeholders the node agents report (each under its own queue, as its Redis user may
// write), read back by a real receiver: GET /v1/placeholders, `volume-medic placeholders`, the
// chart's `uninstall-check` and `prepare-uninstall`, which asks only for the releases the runbook
// allows (disk back and nothing holding the device; the disk not back only with --force; a held
// device never) and exits 1 while anything is attached.

const WWN = '5000c500a1b2c3d4';
const placeholder = (pv: string, o: Partial<ReportedPlaceholder> = {}): ReportedPlaceholder => ({
  pv,
  path: `/dev/disk/by-id/wwn-0x${WWN}`,
  loop: 'loop101',
  since: '2026-12-01T03:00:00.000Z',
  attached: true,
  diskBack: false,
  heldBy: [],
  ...o,
});
const report = (node: string, placeholders: ReportedPlaceholder[]): PlaceholderReport => ({
  version: 1,
  node,
  at: '2026-12-07T14:00:00.000Z',
  placeholders,
  unreadable: [],
});

describe('the placeholders the agents report', () => {
  const prefix = uniquePrefix('lpvlist');
  let receiver: Receiver;
  let ops: Operators;
  let redis: Redis;
  let TOKEN: string;
  const cli = async (...argv: string[]) => {
    const lines: string[] = [];
    const code = await run(
      argv,
      { VOLUME_MEDIC_URL: receiver.url, VOLUME_MEDIC_OPERATOR_TOKEN: TOKEN },
      (s) => lines.push(s),
      (s) => lines.push(s),
    );
    return { code, text: lines.join('\n') };
  };
  const put = async (node: string, r: PlaceholderReport): Promise<void> => {
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName(node));
    await writePlaceholderReport(redis, prefix, nodeQueueName(node), r);
  };

  beforeAll(async () => {
    ops = await startOperators();
    TOKEN = ops.token('alice');
    redis = new Redis(redisUrl());
    receiver = await startReceiver(testConfig({ redisUrl: redisUrl(), queuePrefix: prefix }), { operatorKubeConfig: ops.api.kubeConfig() });
    await put('worker-1', report('worker-1', [placeholder('local-pv-back', { diskBack: true }), placeholder('local-pv-gone', { loop: 'loop102' })]));
    await put(
      'worker-2',
      report('worker-2', [
        placeholder('local-pv-held', { diskBack: true, heldBy: ['pid 4242 (postgres, pod UID 1b4e28ba-2fa1-11d2-883f-0016d3cca427) has it open'] }),
      ]),
    );
  });
  afterAll(async () => {
    await receiver?.close();
    await ops?.close();
    redis?.disconnect();
    await dropPrefix(prefix);
  });

  it('lists each placeholder with its node, PV, path, loop device, since when, whether the disk is back and what holds it', async () => {
    const r = await getJson(`${receiver.url}/v1/placeholders`, TOKEN);
    expect(r.invalid).toEqual([]);
    expect(r.placeholders).toHaveLength(3);
    expect(r.placeholders).toContainEqual({
      node: 'worker-2',
      reportedAt: '2026-12-07T14:00:00.000Z',
      ...placeholder('local-pv-held', { diskBack: true, heldBy: ['pid 4242 (postgres, pod UID 1b4e28ba-2fa1-11d2-883f-0016d3cca427) has it open'] }),
    });
  });

  it('needs an operator allowed to list placeholders', async () => {
    expect((await fetch(`${receiver.url}/v1/placeholders`)).status).toBe(401);
    const viewer = ops.token('val', VIEWERS);
    expect((await fetch(`${receiver.url}/v1/placeholders`, { headers: { authorization: `Bearer ${viewer}` } })).status).toBe(403);
  });

  it('names a report that does not parse, or that claims another node, instead of dropping it', async () => {
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName('worker-9'), nodeQueueName('worker-8'));
    await redis.set(placeholderReportKey(prefix, nodeQueueName('worker-9')), '{"version":1,"node":"worker-9","placeholders":"no"}');
    await redis.set(placeholderReportKey(prefix, nodeQueueName('worker-8')), JSON.stringify(report('worker-1', [])));
    const r = await getJson(`${receiver.url}/v1/placeholders`, TOKEN);
    expect(r.invalid).toEqual([
      { node: 'worker-8', why: 'the report names node worker-1, but it is under the queue of worker-8' },
      { node: 'worker-9', why: expect.stringContaining('placeholders') },
    ]);
    await redis.del(placeholderReportKey(prefix, nodeQueueName('worker-9')), placeholderReportKey(prefix, nodeQueueName('worker-8')));
  });

  it('names a node whose agent runs but has not reported: its placeholders are unknown, not none', async () => {
    await redis.sadd(knownQueuesKey(prefix), nodeQueueName('worker-7'));
    await redis.set(presenceKey(prefix, nodeQueueName('worker-7')), String(Date.now()), 'PX', 60_000);
    try {
      const r = await getJson(`${receiver.url}/v1/placeholders`, TOKEN);
      expect(r.invalid).toEqual([{ node: 'worker-7', why: expect.stringMatching(/^its agent runs but has not reported its placeholders yet/) }]);
      const check = await cli('uninstall-check');
      expect(check.code).toBe(1);
      expect(check.text).toContain('node worker-7: placeholders unknown: its agent runs but has not reported');
    } finally {
      await redis.del(presenceKey(prefix, nodeQueueName('worker-7')));
    }
  });

  it('prints them from the command line', async () => {
    const r = await cli('placeholders');
    expect(r.code).toBe(0);
    expect(r.text).toMatch(/worker-1\s+local-pv-back\s+\/dev\/disk\/by-id\/wwn-0x5000c500a1b2c3d4\s+loop101/);
    expect(r.text).toContain('pid 4242 (postgres');
  });

  it('uninstall-check refuses, naming each placeholder and prepare-uninstall; --allow-stranded warns and passes', async () => {
    const r = await cli('uninstall-check');
    expect(r.code).toBe(1);
    expect(r.text).toContain('refusing the uninstall');
    for (const pv of ['local-pv-back', 'local-pv-gone', 'local-pv-held']) expect(r.text).toContain(`PV ${pv}`);
    expect(r.text).toContain('volume-medic prepare-uninstall');
    const allowed = await cli('uninstall-check', '--allow-stranded');
    expect(allowed.code).toBe(0);
    expect(allowed.text).toContain('WARNING');
  });

  it('uninstall-check reads its token from a file (the hook’s projected token); with --allow-stranded it passes even with no receiver to ask', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vm-uninstall-check-'));
    try {
      writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
      const lines: string[] = [];
      const code = await run(
        ['--token-file', join(dir, 'token'), 'uninstall-check'],
        { VOLUME_MEDIC_URL: receiver.url },
        (s) => lines.push(s),
        (s) => lines.push(s),
      );
      expect(code).toBe(1);
      expect(lines.join('\n')).toContain('PV local-pv-held');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const gone = async (...argv: string[]) => {
      const lines: string[] = [];
      const code = await run(
        argv,
        { VOLUME_MEDIC_URL: 'http://127.0.0.1:9', VOLUME_MEDIC_OPERATOR_TOKEN: TOKEN },
        (s) => lines.push(s),
        (s) => lines.push(s),
      );
      return { code, text: lines.join('\n') };
    };
    expect((await gone('uninstall-check')).code).toBe(1);
    const allowed = await gone('uninstall-check', '--allow-stranded');
    expect(allowed.code).toBe(0);
    expect(allowed.text).toMatch(/WARNING: could not ask the receiver/);
  });

  it('prepare-uninstall asks for the checked release of the one whose disk is back, never of a held one, and names the decision for the rest', async () => {
    const r = await cli('prepare-uninstall');
    expect(r.code).toBe(1);
    expect(r.text).toMatch(/node worker-1: PV local-pv-back .*disk back, release asked for: volume-medic job /);
    expect(r.text).toMatch(
      /PV local-pv-gone .*stays, its disk is not back\.\n\s+decide: .*placeholders release local-pv-gone --node worker-1 .* --force --why/,
    );
    expect(r.text).toMatch(/PV local-pv-held .*stays, still in use: pid 4242[^\n]*\n\s+decide: stop the pod/);
    const jobs = testJobs(redis, prefix);
    const w1 = await jobs.list(nodeQueueName('worker-1'));
    const w2 = await jobs.list(nodeQueueName('worker-2'));
    await jobs.close();
    expect(w1.map((j) => j.data)).toEqual([
      expect.objectContaining({ action: 'release', release: { by: 'detector', force: false }, target: expect.objectContaining({ pv: 'local-pv-back' }) }),
    ]);
    expect(w2).toEqual([]);
  });

  it('with --force it forces the release of one whose disk is not back (with why), still never a held one', async () => {
    expect((await cli('prepare-uninstall', '--force')).code).toBe(2);
    const r = await cli('prepare-uninstall', '--force', '--why', 'cluster torn down, disks not returning');
    expect(r.code).toBe(1);
    expect(r.text).toMatch(/PV local-pv-gone .*forced release/);
    expect(r.text).toMatch(/PV local-pv-held .*stays, still in use/);
    const jobs = testJobs(redis, prefix);
    const w2 = await jobs.list(nodeQueueName('worker-2'));
    await jobs.close();
    expect(w2).toEqual([]);
  });

  it('does not mark the node queues for host state removal while placeholders remain', async () => {
    const r = await uninstallCheck(
      apiClient(receiver.url, TOKEN),
      { json: false, allowStranded: false, armHostStateRemoval: true, armWaitMs: 0 },
      () => undefined,
    );
    expect(r).toBe(1);
    expect(await uninstallMarked(redis, prefix, nodeQueueName('worker-1'))).toBe(false);
  });

  it('passes both once the agents report nothing attached', async () => {
    await put('worker-1', report('worker-1', []));
    await put('worker-2', report('worker-2', []));
    // "None attached" is said, not left to a missing key.
    expect(JSON.parse((await redis.get(placeholderReportKey(prefix, nodeQueueName('worker-1'))))!)).toMatchObject({ placeholders: [] });
    expect(await cli('uninstall-check')).toMatchObject({ code: 0 });
    expect(await cli('prepare-uninstall')).toMatchObject({ code: 0, text: expect.stringContaining('nothing stops an uninstall') });
  });

  it('once it passes, --arm-host-state-removal marks every node queue (audited, lapsing by itself) and the agents read their own mark', async () => {
    const lines: string[] = [];
    const waited: number[] = [];
    const code = await uninstallCheck(
      apiClient(receiver.url, TOKEN),
      { json: false, allowStranded: false, armHostStateRemoval: true, armWaitMs: 1234, sleep: async (ms) => void waited.push(ms) },
      (s) => lines.push(s),
    );
    expect(code).toBe(0);
    expect(lines.join('\n')).toMatch(/node queue\(s\) marked for the uninstall until .*; waiting 1.234 s/);
    expect(waited).toEqual([1234]);
    expect(await uninstallMarked(redis, prefix, nodeQueueName('worker-1'))).toBe(true);
    const ttl = await redis.pttl(uninstallMarkKey(prefix, nodeQueueName('worker-2')));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(UNINSTALL_MARK_TTL_MS);
    const { audit } = await getJson(`${receiver.url}/v1/controls/audit`, TOKEN);
    expect(audit).toContainEqual(expect.objectContaining({ action: 'uninstall-armed', by: 'alice' }));
    // Arming needs its own verb: a viewer may not.
    const viewer = ops.token('val', VIEWERS);
    expect((await fetch(`${receiver.url}/v1/uninstall/arm`, { method: 'POST', headers: { authorization: `Bearer ${viewer}` } })).status).toBe(403);
  });
});
