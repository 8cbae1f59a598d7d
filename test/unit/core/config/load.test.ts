import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadEveryConfig, modeOf } from '../../../../src/core/config/load.ts';

const dir = mkdtempSync(join(tmpdir(), 'vm-config-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('configuration', () => {
  it('has safe defaults: port 8080, every runbook in dry-run, no token', () => {
    const c = loadEveryConfig({});
    expect(c.port).toBe(8080);
    expect(c.defaultMode).toBe('dry-run');
    expect(modeOf(c, 'local-pv-placeholder')).toBe('dry-run');
    expect(c.tokens).toEqual([]);
    expect(c.bodyLimit).toBe(1024 * 1024);
  });

  it('reads per-runbook modes and leaves the others at the default', () => {
    const c = loadEveryConfig({ RUNBOOK_MODES: 'local-pv-placeholder=enforce' });
    expect(modeOf(c, 'local-pv-placeholder')).toBe('enforce');
    expect(modeOf(c, 'residual-multipath-cleanup')).toBe('dry-run');
  });

  it('names the variable, the problem and the value when one is wrong', () => {
    expect(() => loadEveryConfig({ PORT: 'eighty' })).toThrow(/PORT: .*got "eighty"/);
    expect(() => loadEveryConfig({ RUNBOOK_MODES: 'local-pv-placeholder=yolo' })).toThrow(/RUNBOOK_MODES/);
    expect(() => loadEveryConfig({ RUNBOOK_MODES: 'unknown-runbook=enforce' })).toThrow(/RUNBOOK_MODES/);
    expect(() => loadEveryConfig({ NODE_NAME: 'Bad_Node' })).toThrow(/NODE_NAME: not a valid Kubernetes node name/);
    expect(() => loadEveryConfig({ PORT: 'eighty' })).toThrow(ConfigError);
  });

  it('gives HTTP requests 10 s for headers and 30 s in all by default, and refuses a headers timeout over the request timeout', () => {
    expect(loadEveryConfig({})).toMatchObject({ httpHeadersTimeoutMs: 10_000, httpRequestTimeoutMs: 30_000 });
    expect(loadEveryConfig({ HTTP_HEADERS_TIMEOUT_MS: '2000', HTTP_REQUEST_TIMEOUT_MS: '5000' })).toMatchObject({
      httpHeadersTimeoutMs: 2000,
      httpRequestTimeoutMs: 5000,
    });
    expect(() => loadEveryConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS: may not exceed HTTP_REQUEST_TIMEOUT_MS/);
    expect(() => loadEveryConfig({ HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS/);
  });

  it('reads the RBD fencing scope: a NotReady grace of 300 s and no fence network by default, listed CIDRs validated at start', () => {
    expect(loadEveryConfig({})).toMatchObject({ rbdFenceNotReadySeconds: 300, rbdFenceCidrs: [] });
    expect(loadEveryConfig({ RBD_FENCE_CIDRS: '192.0.2.0/24, 2001:db8::/32', RBD_FENCE_NOT_READY_SECONDS: '0' })).toMatchObject({
      rbdFenceCidrs: ['192.0.2.0/24', '2001:db8::/32'],
      rbdFenceNotReadySeconds: 0,
    });
    expect(() => loadEveryConfig({ RBD_FENCE_CIDRS: '192.0.2.0/24,backup-host' })).toThrow(
      /RBD_FENCE_CIDRS: an IPv4 or IPv6 network in CIDR form.*got \["192.0.2.0\/24","backup-host"\]/,
    );
    expect(() => loadEveryConfig({ RBD_FENCE_CIDRS: '10.0.0.0/33' })).toThrow(/RBD_FENCE_CIDRS/);
    expect(() => loadEveryConfig({ RBD_FENCE_NOT_READY_SECONDS: '-1' })).toThrow(/RBD_FENCE_NOT_READY_SECONDS/);
  });

  it('believes LocalDiskLost Events from the bundled NPD monitor in `default` unless told other monitors and namespace', () => {
    expect(loadEveryConfig({})).toMatchObject({ npdEventSources: ['local-pv-monitor', 'kubelet-monitor'], npdEventNamespace: 'default' });
    expect(loadEveryConfig({ NPD_EVENT_SOURCES: 'local-pv-monitor, disk-monitor', NPD_EVENT_NAMESPACE: 'node-problem-detector' })).toMatchObject({
      npdEventSources: ['local-pv-monitor', 'disk-monitor'],
      npdEventNamespace: 'node-problem-detector',
    });
    expect(() => loadEveryConfig({ NPD_EVENT_SOURCES: ',' })).toThrow(/NPD_EVENT_SOURCES/);
    expect(() => loadEveryConfig({ NPD_EVENT_SOURCES: 'kernel monitor' })).toThrow(/NPD_EVENT_SOURCES/);
    expect(() => loadEveryConfig({ NPD_EVENT_NAMESPACE: 'Default' })).toThrow(/NPD_EVENT_NAMESPACE/);
  });

  it('reads how often the agent looks for a placeholder’s returned disk: 300 s by default, 0 for at start only', () => {
    expect(loadEveryConfig({})).toMatchObject({ placeholderCheckSeconds: 300 });
    expect(loadEveryConfig({ PLACEHOLDER_CHECK_SECONDS: '0' })).toMatchObject({ placeholderCheckSeconds: 0 });
    expect(() => loadEveryConfig({ PLACEHOLDER_CHECK_SECONDS: '-5' })).toThrow(/PLACEHOLDER_CHECK_SECONDS/);
    expect(() => loadEveryConfig({ PLACEHOLDER_CHECK_SECONDS: 'often' })).toThrow(/PLACEHOLDER_CHECK_SECONDS/);
  });

  it("reads the orphan scan's interval (300 s, 0: none) and an orphan's minimum age (600 s)", () => {
    expect(loadEveryConfig({})).toMatchObject({ orphanScanSeconds: 300, orphanMinAgeSeconds: 600, kubeletRootDir: '/var/lib/kubelet' });
    expect(loadEveryConfig({ ORPHAN_SCAN_SECONDS: '0', ORPHAN_MIN_AGE_SECONDS: '120' })).toMatchObject({ orphanScanSeconds: 0, orphanMinAgeSeconds: 120 });
    expect(() => loadEveryConfig({ ORPHAN_MIN_AGE_SECONDS: '-1' })).toThrow(/ORPHAN_MIN_AGE_SECONDS/);
  });

  it('reads how long a job may wait for a missing node agent: 900 s by default, 0 for report only, and refuses anything else', () => {
    expect(loadEveryConfig({})).toMatchObject({ noAgentDeadlineSeconds: 900 });
    expect(loadEveryConfig({ NO_AGENT_DEADLINE_SECONDS: '0' })).toMatchObject({ noAgentDeadlineSeconds: 0 });
    expect(loadEveryConfig({ NO_AGENT_DEADLINE_SECONDS: '3600' })).toMatchObject({ noAgentDeadlineSeconds: 3600 });
    for (const bad of ['-1', '15m', '1.5', '999999999']) {
      expect(() => loadEveryConfig({ NO_AGENT_DEADLINE_SECONDS: bad })).toThrow(ConfigError);
      expect(() => loadEveryConfig({ NO_AGENT_DEADLINE_SECONDS: bad })).toThrow(/NO_AGENT_DEADLINE_SECONDS/);
    }
  });

  it('never echoes a token in an error', () => {
    let message = '';
    try {
      loadEveryConfig({ VOLUME_MEDIC_TOKEN: 'short-secret' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/VOLUME_MEDIC_TOKEN: a token must be at least 16 characters/);
    expect(message).not.toContain('short-secret');
  });

  it('takes several tokens from the variable and the token file, for rotation', () => {
    const tokenFile = file('token', 'file-token-0123456789abcdef\n');
    const c = loadEveryConfig({ VOLUME_MEDIC_TOKEN: 'env-token-0123456789abcdef,second-token-0123456789', VOLUME_MEDIC_TOKEN_FILE: tokenFile });
    expect(c.tokens).toEqual(['env-token-0123456789abcdef', 'second-token-0123456789', 'file-token-0123456789abcdef']);
  });

  it('says which token file it could not read', () => {
    expect(() => loadEveryConfig({ VOLUME_MEDIC_TOKEN_FILE: join(dir, 'missing') })).toThrow(/VOLUME_MEDIC_TOKEN_FILE: cannot read .*missing: ENOENT/);
  });

  it('reads a YAML config file and lets the environment win', () => {
    const cfg = file('config.yaml', 'port: 9090\nbodyLimit: 4096\nrunbookModes:\n  rbd-stale-mapping: enforce\n');
    const c = loadEveryConfig({ VOLUME_MEDIC_CONFIG: cfg, PORT: '9999' });
    expect(c.port).toBe(9999);
    expect(c.bodyLimit).toBe(4096);
    expect(modeOf(c, 'rbd-stale-mapping')).toBe('enforce');
  });

  it('refuses unknown settings in the config file instead of ignoring a typo', () => {
    const cfg = file('typo.yaml', 'prot: 9090\n');
    expect(() => loadEveryConfig({ VOLUME_MEDIC_CONFIG: cfg })).toThrow(/unknown setting\(s\) prot/);
  });
});
