import { DEFAULT_NPD_EVENT_SOURCES } from '../../../../src/core/config/sections/receiver-sources.ts';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { classifyLocalDiskLost } from '../../../../src/control/sources/classify-event.ts';
import { validateAll } from '../../../testkit/k8s-schema.ts';
import { DEPLOY_DIR, find, rendered } from '../../../support/manifests.ts';

// The snippets operators copy into Alertmanager, Prometheus, node-problem-detector and
// kubernetes-event-exporter, checked for what volume-medic relies on.

const dir = join(DEPLOY_DIR, 'integrations');
const yamlOf = (name: string): Record<string, any> => parseYaml(readFileSync(join(dir, name), 'utf8')) as Record<string, any>;
const RECEIVER = 'https://volume-medic.volume-medic.svc:8080';

describe('Alertmanager', () => {
  const am = yamlOf('alertmanager.yaml');
  it('posts node-recovery alerts, resolved ones included, with the bearer token file', () => {
    const webhook = am['receivers'].find((r: any) => r.name === 'volume-medic').webhook_configs[0];
    expect(webhook.url).toBe(`${RECEIVER}/v1/alertmanager`);
    expect(webhook.send_resolved).toBe(true);
    expect(webhook.http_config.authorization.credentials_file).toMatch(/^\/.*token$/);
    const route = am['route'].routes.find((r: any) => r.receiver === 'volume-medic');
    expect(route.continue).toBe(true);
    const config = (find(rendered('static'), 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>)['NODE_RECOVERY_ALERTS']!.split(',');
    for (const name of ['KubeNodeNotReady', 'KubeNodeUnreachable', 'VolumeMedicNodeNotReady']) {
      expect(route.matchers.join(' ')).toContain(name);
      expect(config).toContain(name);
    }
  });
});

describe('PrometheusRule', () => {
  it("the chart's PrometheusRule is valid and its node alert is one volume-medic treats as node recovery", async () => {
    const objects = [find(rendered('monitoring'), 'PrometheusRule', 'volume-medic')];
    expect(await validateAll(objects)).toEqual([]);
    const alerts = (objects[0]!['spec'] as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((g) => g.rules);
    expect(alerts.slice(0, 2).map((a) => a.alert)).toEqual(['VolumeMedicNodeNotReady', 'VolumeMedicPodStuckContainerCreating']);
    expect(alerts[0]!.expr).toContain('condition="Ready"');
    expect(alerts[1]!.expr).toContain('ContainerCreating');
  });
});

describe('kubernetes-event-exporter', () => {
  const cfg = yamlOf('event-exporter.yaml');
  it('routes exactly the storage and node reasons to /v1/events with the Authorization header', () => {
    const webhook = cfg['receivers'].find((r: any) => r.name === 'volume-medic').webhook;
    expect(webhook.endpoint).toBe(`${RECEIVER}/v1/events`);
    expect(webhook.headers.Authorization).toMatch(/^Bearer \S+/);
    const match = cfg['route'].routes[0].match[0];
    expect(match.receiver).toBe('volume-medic');
    const re = new RegExp(match.reason);
    for (const r of ['FailedMount', 'FailedMapVolume', 'FailedAttachVolume', 'Failed', 'NodeReady', 'Rebooted', 'LocalDiskLost', 'OrphanedPodVolumes'])
      expect(re.test(r), r).toBe(true);
    for (const r of ['FailedScheduling', 'FailedCreatePodSandBox', 'Scheduled', 'NodeNotReady']) expect(re.test(r), r).toBe(false);
  });
});

describe('node-problem-detector', () => {
  const monitor = JSON.parse(readFileSync(join(dir, 'npd/local-pv-monitor.json'), 'utf8'));
  it('the custom plugin monitor sets the LocalDiskLost condition from the check script', () => {
    expect(monitor.plugin).toBe('custom');
    expect(monitor.conditions).toEqual([expect.objectContaining({ type: 'LocalDiskLost' })]);
    expect(monitor.rules[0]).toMatchObject({ type: 'permanent', condition: 'LocalDiskLost', reason: 'LocalDiskLost' });
    expect(monitor.rules[0].path).toMatch(/\/check-local-pv\.sh$/);
    // NPD cuts the script's output at max_output_length (80 by default): keep several PVs.
    expect(monitor.pluginConfig.max_output_length).toBeGreaterThanOrEqual(1024);
  });

  // NPD's own journald monitors (kubernetes/node-problem-detector config/systemd-monitor.json) have
  // this shape; a rule's pattern must match to the end of the buffered log (CompilePattern adds \z).
  const kubelet = JSON.parse(readFileSync(join(dir, 'npd/kubelet-orphaned-pod-monitor.json'), 'utf8'));
  it("the kubelet monitor turns kubelet's orphaned-pod line, of every generation, into an OrphanedPodVolumes Event", () => {
    expect(kubelet).toMatchObject({
      plugin: 'journald',
      pluginConfig: { source: 'kubelet' },
      logPath: '/var/log/journal',
      source: 'kubelet-monitor',
      conditions: [],
    });
    expect(kubelet.rules).toEqual([{ type: 'temporary', reason: 'OrphanedPodVolumes', pattern: expect.any(String) }]);
    // The Event's source.component is the monitor's source: the receiver believes it by default.
    expect(DEFAULT_NPD_EVENT_SOURCES).toContain(kubelet.source);
    const rule = new RegExp(`${kubelet.rules[0].pattern}$`);
    for (const f of ['orphaned-glog.txt', 'orphaned-subpaths-glog.txt', 'orphaned-klog-structured.txt']) {
      const line = readFileSync(join(dir, '../../test/fixtures/kubelet', f), 'utf8').trim();
      expect(rule.test(line), f).toBe(true);
    }
    expect(rule.test('I0116 08:30:12.044483 1 kubelet.go:2440] "SyncLoop (PLEG): event for pod"')).toBe(false);
  });

  const script = join(dir, 'npd/check-local-pv.sh');
  const root = mkdtempSync(join(tmpdir(), 'vm-npd-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'dev/disk/by-id'), { recursive: true });
  writeFileSync(join(root, 'dev/sdb'), '');
  symlinkSync('../../sdb', join(root, 'dev/disk/by-id/wwn-0x5000c500a1b2c3d4'));
  symlinkSync('../../sdz', join(root, 'dev/disk/by-id/wwn-0x5000c500deadbeef')); // dangling

  // Lists name the node first (`<node> <pv> <path>`); `w2 ` below is this test's node.
  const run = (list: string, env: Record<string, string> = {}) => {
    const file = join(root, `list-${Math.random().toString(36).slice(2)}`);
    writeFileSync(
      file,
      list
        .split('\n')
        .map((l) => (l === '' || l.startsWith('#') || l.startsWith('@') ? l.replace(/^@/, '') : `worker-2 ${l}`))
        .join('\n'),
    );
    const r = spawnSync('sh', [script], {
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOST_ROOT: root, LOCAL_PV_LIST: file, NODE_NAME: 'worker-2', ...env },
      encoding: 'utf8',
    });
    return { code: r.status, out: r.stdout.trim() };
  };

  it('device present -> exit 0', () => {
    const r = run('# node pv path\nlocal-pv-1 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n');
    expect(r).toEqual({ code: 0, out: 'local PV local-pv-1: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4 is present' });
  });

  it('device missing (or a dangling link) -> exit 1 naming each PV, in the format the parser reads', () => {
    const r = run(
      [
        'local-pv-1 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4',
        'local-pv-2 /dev/disk/by-id/wwn-0x5000c500deadbeef',
        'local-pv-3 /dev/disk/by-id/wwn-0x5000c500cafef00d',
        'fs-pv /mnt/disks/ssd1',
      ].join('\n'),
    );
    expect(r.code).toBe(1);
    expect(r.out).toBe(
      'local PV local-pv-2: /dev/disk/by-id/wwn-0x5000c500deadbeef is missing; local PV local-pv-3: /dev/disk/by-id/wwn-0x5000c500cafef00d is missing',
    );
    const parsed = classifyLocalDiskLost('LocalDiskLost', r.out, 'worker-2', ['t'], { source: 'npd' } as never, true);
    expect(parsed.signals?.map((s) => [s.kind, (s as { pv?: string }).pv])).toEqual([
      ['local-device-missing', 'local-pv-2'],
      ['local-device-missing', 'local-pv-3'],
    ]);
  });

  it("follows links under HOST_ROOT: an absolute target is the host's, not this container's", () => {
    writeFileSync(join(root, 'dev/sdzq'), '');
    symlinkSync('/dev/sdzq', join(root, 'dev/disk/by-id/wwn-0x5000c500a1b2c3e5'));
    expect(run('local-pv-4 /dev/disk/by-id/wwn-0x5000c500a1b2c3e5\n')).toEqual({
      code: 0,
      out: 'local PV local-pv-4: /dev/disk/by-id/wwn-0x5000c500a1b2c3e5 is present',
    });
  });

  it('a placeholder standing in (the link leads to a loop device) -> still missing, so its condition stays and nothing releases it', () => {
    // What local-pv-placeholder leaves: the by-id path -> /dev/loopN (absolute), a block device there.
    writeFileSync(join(root, 'dev/loop101'), '');
    symlinkSync('/dev/loop101', join(root, 'dev/disk/by-id/wwn-0x5000c500feedf00d'));
    const r = run('local-pv-5 /dev/disk/by-id/wwn-0x5000c500feedf00d\nlocal-pv-1 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n');
    expect(r).toEqual({
      code: 1,
      out: 'local PV local-pv-5: /dev/disk/by-id/wwn-0x5000c500feedf00d is missing (placeholder /dev/loop101 stands in)',
    });
    const parsed = classifyLocalDiskLost('LocalDiskLost', r.out, 'worker-2', ['t'], { source: 'npd' } as never, true);
    expect(parsed.signals?.map((s) => [s.kind, (s as { pv?: string }).pv, (s as { path?: string }).path])).toEqual([
      ['local-device-missing', 'local-pv-5', '/dev/disk/by-id/wwn-0x5000c500feedf00d'],
    ]);
    // A loop device's partition is not a placeholder.
    writeFileSync(join(root, 'dev/loop7p1'), '');
    symlinkSync('../../loop7p1', join(root, 'dev/disk/by-id/wwn-0x5000c500feedf11e'));
    expect(run('local-pv-6 /dev/disk/by-id/wwn-0x5000c500feedf11e\n').code).toBe(0);
  });

  it('a loop of links -> missing', () => {
    symlinkSync('wwn-0x5000c500c0ffee02', join(root, 'dev/disk/by-id/wwn-0x5000c500c0ffee01'));
    symlinkSync('wwn-0x5000c500c0ffee01', join(root, 'dev/disk/by-id/wwn-0x5000c500c0ffee02'));
    expect(run('local-pv-7 /dev/disk/by-id/wwn-0x5000c500c0ffee01\n')).toEqual({
      code: 1,
      out: 'local PV local-pv-7: /dev/disk/by-id/wwn-0x5000c500c0ffee01 is missing',
    });
  });

  it('no Local PV block device on the node -> exit 0', () => {
    expect(run('fs-pv /mnt/disks/ssd1\n')).toEqual({ code: 0, out: 'no local PV block devices on this node' });
  });

  it("one list for the whole DaemonSet: each node reports only its own PVs, never another node's as missing", () => {
    // Two nodes share the ConfigMap's list; worker-2's disk is there, worker-3's is not on worker-2.
    const list = [
      '@worker-2 local-pv-1 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4',
      '@worker-3 local-pv-9 /dev/disk/by-id/wwn-0x5000c500cafe0003',
      '@worker-3 local-pv-8 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4',
    ].join('\n');
    expect(run(list)).toEqual({ code: 0, out: 'local PV local-pv-1: /dev/disk/by-id/wwn-0x5000c500a1b2c3d4 is present' });
    // On worker-3 (its own tree: here, the same directory), local-pv-9's disk is missing and only that is said.
    const three = run(list, { NODE_NAME: 'worker-3' });
    expect(three).toEqual({ code: 1, out: 'local PV local-pv-9: /dev/disk/by-id/wwn-0x5000c500cafe0003 is missing' });
    // A node without lines has nothing to check.
    expect(run(list, { NODE_NAME: 'worker-4' })).toEqual({ code: 0, out: 'no local PV block devices on this node' });
  });

  it('cannot tell (no list, no kubectl, no NODE_NAME, an old two-column list) or a hostile list -> exit 2', () => {
    // No list file: the script cannot ask kubectl either (not on this PATH).
    const none = spawnSync('/bin/sh', [script], {
      env: { PATH: '/nonexistent', LOCAL_PV_LIST: join(root, 'absent'), NODE_NAME: 'worker-2' },
      encoding: 'utf8',
    });
    expect(none.status).toBe(2);
    expect(run('local-pv-1 /dev/sdb\n', { NODE_NAME: '' }).code).toBe(2);
    // `<pv> <path>` (the format before the node column): refused, never read as node=pv.
    const old = run('@local-pv-1 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n');
    expect(old.code).toBe(2);
    expect(old.out).toMatch(/expected <node> <pv> <path>/);
    expect(run('local-pv-1 /dev/../etc/passwd\n').code).toBe(2);
    expect(run('Bad_PV /dev/sdb\n').code).toBe(2);
  });
});

describe('docs/webhooks.md snippets say what the integration files say', () => {
  const page = readFileSync(join(DEPLOY_DIR, '../docs/webhooks.md'), 'utf8');
  const section = page.slice(page.indexOf('# Pointing the senders at it'), page.indexOf('## Event sources'));
  const blocks = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parseYaml(m[1]!) as Record<string, any>);

  it('the Alertmanager snippet is deploy/integrations/alertmanager.yaml (route, matchers, token path)', () => {
    const am = blocks.find((b) => b['receivers']?.[0]?.webhook_configs);
    expect(am).toEqual(yamlOf('alertmanager.yaml'));
  });

  it("the event-exporter snippet is deploy/integrations/event-exporter.yaml's route and receiver (anchored, every reason)", () => {
    const ee = blocks.find((b) => b['receivers']?.[0]?.webhook);
    const file = yamlOf('event-exporter.yaml');
    expect(ee).toEqual({ route: file['route'], receivers: file['receivers'] });
  });
});
