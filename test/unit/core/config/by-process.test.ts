import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { queueWindowMs } from '../../../../src/core/catalogue/policy.ts';
import { inCluster, kubeAccessConfigured } from '../../../../src/core/config/in-cluster.ts';
import { ConfigError, loadConfig } from '../../../../src/core/config/load.ts';

const dir = mkdtempSync(join(tmpdir(), 'vm-config-by-process-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('each process reads its own settings', () => {
  it('a bad value in a receiver-only setting does not stop the node agent or the cluster worker', () => {
    const env = { PORT: 'eighty', BODY_LIMIT: 'big', OPERATOR_AUTH: 'maybe', NODE_NAME: 'worker-1' };
    expect(loadConfig('node-agent', env).nodeName).toBe('worker-1');
    expect(() => loadConfig('cluster-worker', env)).not.toThrow();
  });

  it('the receiver still refuses it, naming the variable and the value (exit 2)', () => {
    expect(() => loadConfig('receiver', { PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig('receiver', { PORT: 'eighty' })).toThrow(/PORT: .*got "eighty"/);
    expect(() => loadConfig(['receiver', 'node-agent'], { PORT: 'eighty' })).toThrow(/PORT/);
  });

  it("a bad value in one agent's setting stops that agent only", () => {
    expect(() => loadConfig('cluster-worker', { RBD_FENCE_CIDRS: 'backup-host' })).toThrow(/RBD_FENCE_CIDRS/);
    expect(() => loadConfig('node-agent', { RBD_FENCE_CIDRS: 'backup-host' })).not.toThrow();
    expect(() => loadConfig('node-agent', { RESIDUAL_VICTIM_OPENERS: 'a very long process name' })).toThrow(/RESIDUAL_VICTIM_OPENERS/);
    expect(() => loadConfig('cluster-worker', { RESIDUAL_VICTIM_OPENERS: 'a very long process name' })).not.toThrow();
    expect(() => loadConfig('receiver', { NODE_LABELS: 'no-equals-sign' })).not.toThrow();
    expect(() => loadConfig('node-agent', { NODE_LABELS: 'no-equals-sign' })).toThrow(/NODE_LABELS/);
  });

  it('a shared setting stops every process that reads it', () => {
    for (const p of ['receiver', 'node-agent', 'cluster-worker'] as const) {
      expect(() => loadConfig(p, { QUEUE_PREFIX: 'a{b}' }), p).toThrow(/QUEUE_PREFIX/);
      expect(() => loadConfig(p, { RUNBOOK_MODES: 'local-pv-placeholder=yolo' }), p).toThrow(/RUNBOOK_MODES/);
      expect(() => loadConfig(p, { REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'c1:7000' }), p).toThrow(/REDIS_CLUSTER_NODES: set only one of/);
    }
  });

  it('a section checks across the settings the process reads: replica acks are the receiver’s', () => {
    const env = { REDIS_CLUSTER_NODES: 'c1:7000', REDIS_ACK_REPLICAS: '1' };
    expect(() => loadConfig('receiver', env)).toThrow(/REDIS_ACK_REPLICAS: not supported with REDIS_CLUSTER_NODES/);
    expect(loadConfig('node-agent', env).redisClusterNodes).toEqual(['c1:7000']);
  });

  it("the receiver's whole-value checks do not run for the agents", () => {
    expect(() => loadConfig('receiver', { TLS_CERT_FILE: '/etc/hostname' })).toThrow(/TLS_CERT_FILE and TLS_KEY_FILE: set both/);
    expect(() => loadConfig('receiver', { HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS: may not exceed/);
    expect(() => loadConfig('node-agent', { TLS_CERT_FILE: '/etc/hostname', HTTP_HEADERS_TIMEOUT_MS: '40000' })).not.toThrow();
  });

  it("holds only the process's settings", () => {
    const agent = loadConfig('node-agent', {});
    expect(agent).toHaveProperty('stateDir');
    expect(agent).toHaveProperty('queuePrefix', 'volume-medic');
    expect(agent).not.toHaveProperty('port');
    expect(agent).not.toHaveProperty('rbdFencing');
    const receiver = loadConfig('receiver', {});
    expect(receiver).toHaveProperty('port', 8080);
    expect(receiver).not.toHaveProperty('stateDir');
    const trial = loadConfig(['receiver', 'node-agent'], {});
    expect(trial).toHaveProperty('port', 8080);
    expect(trial).toHaveProperty('stateDir');
  });

  it("one config file serves every process: each reads its own keys, and a bad value in another's is not its business", () => {
    const cfg = file('shared.yaml', 'port: eighty\nnodeName: worker-2\nrbdFencing: on\n');
    expect(loadConfig('node-agent', { VOLUME_MEDIC_CONFIG: cfg }).nodeName).toBe('worker-2');
    expect(loadConfig('cluster-worker', { VOLUME_MEDIC_CONFIG: cfg }).rbdFencing).toBe('on');
    expect(() => loadConfig('receiver', { VOLUME_MEDIC_CONFIG: cfg })).toThrow(/PORT: /);
    const typo = file('typo.yaml', 'nodeNmae: worker-2\n');
    for (const p of ['receiver', 'node-agent', 'cluster-worker'] as const)
      expect(() => loadConfig(p, { VOLUME_MEDIC_CONFIG: typo }), p).toThrow(/unknown setting\(s\) nodeNmae/);
  });

  it('a secret file is read only by the processes that read the secret', () => {
    expect(() => loadConfig('node-agent', { VOLUME_MEDIC_TOKEN_FILE: join(dir, 'missing') })).not.toThrow();
    expect(() => loadConfig('receiver', { VOLUME_MEDIC_TOKEN_FILE: join(dir, 'missing') })).toThrow(/VOLUME_MEDIC_TOKEN_FILE: cannot read/);
  });
});

describe('derived values', () => {
  it("the dedup window is computed once, per queue placement: the runbooks' own, or DEDUP_WINDOW_SECONDS", () => {
    for (const p of ['receiver', 'node-agent', 'cluster-worker'] as const) {
      expect(loadConfig(p, {}).dedupWindowMs).toEqual({ node: queueWindowMs('node'), cluster: queueWindowMs('cluster') });
      expect(loadConfig(p, { DEDUP_WINDOW_SECONDS: '30' }).dedupWindowMs).toEqual({ node: 30_000, cluster: 30_000 });
    }
  });

  it('in a pod is KUBERNETES_SERVICE_HOST, decided in one place; a kubeconfig is access too', () => {
    expect(inCluster({ KUBERNETES_SERVICE_HOST: '10.96.0.1' })).toBe(true);
    expect(inCluster({ KUBERNETES_SERVICE_HOST: '' })).toBe(false);
    expect(inCluster({ KUBECONFIG: '/home/me/.kube/config' })).toBe(false);
    expect(kubeAccessConfigured({ KUBECONFIG: '/home/me/.kube/config' })).toBe(true);
    expect(kubeAccessConfigured({})).toBe(false);
  });
});
