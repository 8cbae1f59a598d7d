import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  CHART_DIR,
  ChartError,
  CI_VALUES_DIR,
  helmTemplate,
  helmTemplateText,
  readObjects,
  RENDERED_FILE,
  renderedFileText,
  VALUE_SETS,
} from '../../../../scripts/deploy/chart.ts';
import { renderRedisAcl } from '../../../../scripts/deploy/redis-acl.ts';
import { runTool } from '../../../../scripts/deploy/tools.ts';
import { RUNBOOKS } from '../../../../src/core/catalogue/jobs.ts';
import { COMPONENTS } from '../../../../src/adapters/kube/rbac.ts';
import { controlKeyring, controlSealer } from '../../../../src/core/trust/control-keys.ts';
import { keyringFor, readKeys } from '../../../../src/core/trust/keyring.ts';
import { sealerOf, verifySeal } from '../../../../src/core/trust/seal.ts';
import { writeSigningKeys } from '../../../../scripts/lib/signing-keys.ts';
import { ensureSecrets } from '../../../../src/control/secrets/ensure.ts';
import { MemoryObjectStore } from '../../../testkit/memory-object-store.ts';
import { CONTROL_PLANE, find, podSpec, rendered, schedulableOn, secretsSpec, SETS, type PodSpec, type TestNode } from '../../../support/manifests.ts';

// The chart as Helm itself sees it: `helm lint --strict`, its values schema refusing what it
// should, `helm package`, deploy/volume-medic.yaml rendered from it, the generated Secrets
// agreeing with each other, and the checksum annotations that roll pods on a config change.
// Every values set's objects are validated in render.test.ts and rbac.test.ts. Each helm run is a
// process of its own: on a loaded 2-CPU machine a test of several runs needs more than 5 s.

const tmp = mkdtempSync(join(tmpdir(), 'vm-chart-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const helm = (...args: string[]) => runTool('helm', args);

describe('helm', { timeout: 60_000 }, () => {
  it('lints the chart strictly, with its defaults and with every CI values set', () => {
    const defaults = helm('lint', '--strict', CHART_DIR);
    expect(defaults.stdout + defaults.stderr, 'helm lint --strict').toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(defaults.status).toBe(0);
    for (const set of VALUE_SETS) {
      const r = helm('lint', '--strict', CHART_DIR, '--namespace', 'volume-medic', '--values', join(CI_VALUES_DIR, `${set}-values.yaml`));
      expect(r.status, `${set}: ${r.stdout}${r.stderr}`).toBe(0);
    }
  });

  it('renders every CI values set (ci/<name>-values.yaml)', () => {
    expect([...VALUE_SETS]).toEqual([
      'bundled-redis',
      'cluster',
      'defaults',
      'enforce',
      'existing-secrets',
      'external-redis',
      'image-verification',
      'monitoring',
      'node-healthcheck',
      'sentinel',
    ]);
    for (const set of VALUE_SETS) expect(rendered(set).length, set).toBeGreaterThan(10);
  });

  it('packages the chart into volume-medic-<version>.tgz without its CI values', () => {
    const r = helm('package', CHART_DIR, '--destination', tmp);
    expect(r.status, r.stderr).toBe(0);
    const version = (parseYaml(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { version: string }).version;
    expect(readdirSync(tmp)).toContain(`volume-medic-${version}.tgz`);
    // The archive renders like the directory (what `helm install volume-medic-<version>.tgz` gets).
    const fromArchive = helm(
      'template',
      'volume-medic',
      join(tmp, `volume-medic-${version}.tgz`),
      '--namespace',
      'volume-medic',
      '--show-only',
      'templates/config.yaml',
    );
    expect(fromArchive.status, fromArchive.stderr).toBe(0);
    expect(fromArchive.stdout).toBe(helmTemplateText({ show: ['templates/config.yaml'] }));
    const list = runTool('helm', ['show', 'values', join(tmp, `volume-medic-${version}.tgz`)]);
    expect(list.stdout.trimEnd()).toBe(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8').trimEnd());
  });
});

describe('deploy/volume-medic.yaml', { timeout: 60_000 }, () => {
  it('is the chart rendered with deploy/volume-medic.values.yaml (run `npm run deploy:render`)', () => {
    expect(readFileSync(RENDERED_FILE, 'utf8')).toBe(renderedFileText());
  });

  it("holds no Secret (a committed token or key would be every installation's) and creates the namespace, privileged", () => {
    const objects = readObjects(RENDERED_FILE);
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const ns = find(objects, 'Namespace', 'volume-medic');
    expect(ns.metadata['labels']).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged' });
  });
});

describe('values.schema.json refuses bad values (helm template fails, naming the key)', { timeout: 60_000 }, () => {
  const refuses = (set: string[], want: RegExp) => {
    expect(() => helmTemplate({ set }), set.join(' ')).toThrow(want);
    try {
      helmTemplate({ set });
    } catch (err) {
      expect(err).toBeInstanceOf(ChartError);
    }
  };
  it('a misspelt key at the top', () => refuses(['imagee.tag=1'], /additional properties 'imagee' not allowed/));
  it('a misspelt key inside config', () => refuses(['config.defaultMod=enforce'], /\/config.*additional properties 'defaultMod' not allowed/s));
  it('a mode that is neither dry-run nor enforce', () => refuses(['config.defaultMode=on'], /\/config\/defaultMode/));
  it('a runbook that does not exist in runbookModes', () =>
    refuses(['config.runbookModes.multipath-cleanup=enforce'], /invalid propertyName 'multipath-cleanup'/));
  it('a per-runbook mode that is not a mode', () => refuses(['config.runbookModes.rbd-unmap=yes'], /\/config\/runbookModes\/rbd-unmap/));
  it('a digest that is not sha256:<64 hex>', () => refuses(['image.digest=latest'], /\/image\/digest/));
  it("a queue prefix Redis' ACL key pattern cannot hold", () => refuses(['config.queuePrefix=a*b'], /\/config\/queuePrefix/));
  it('a log level pino does not have (LOG_LEVEL=verbose)', () => refuses(['config.logLevel=verbose'], /\/config\/logLevel/));
  it('a misspelt Grafana dashboard switch', () =>
    refuses(['metrics.grafanaDashboard.enable=true'], /\/metrics\/grafanaDashboard.*additional properties 'enable' not allowed/s));
  it('an approval alert after 0 minutes', () =>
    refuses(['metrics.prometheusRule.approvalWaitingMinutes=0'], /\/metrics\/prometheusRule\/approvalWaitingMinutes/));
  it('a Redis setting through extraEnv (credentials belong in Secrets)', () =>
    refuses(['config.extraEnv.REDIS_URL=redis://x:6379'], /invalid propertyName 'REDIS_URL'/));
  it('a setting the chart already sets, through extraEnv', () => refuses(['config.extraEnv.DEFAULT_MODE=enforce'], /invalid propertyName 'DEFAULT_MODE'/));
  it('a number where a setting wants one, given as text', () => refuses(['config.lockDurationMs=soon'], /\/config\/lockDurationMs/));
  it('an unknown Redis topology', () => refuses(['redis.bundled.enabled=false', 'redis.external.topology=replicated'], /\/redis\/external\/topology/));
  it('Sentinel with the bundled Redis', () => refuses(['redis.external.topology=sentinel'], /\/redis\/external\/topology/));
  it('Sentinel without sentinels or a primary name', () =>
    refuses(['redis.bundled.enabled=false', 'redis.external.topology=sentinel'], /\/redis\/external\/(sentinels|sentinelName)/));
  it('a sentinel address without a port', () =>
    refuses(
      ['redis.bundled.enabled=false', 'redis.external.topology=sentinel', 'redis.external.sentinels={redis-0}', 'redis.external.sentinelName=m'],
      /\/redis\/external\/sentinels\/0/,
    ));
  it('Cluster without nodes', () => refuses(['redis.bundled.enabled=false', 'redis.external.topology=cluster'], /\/redis\/external\/clusterNodes/));
  it('Cluster with replica acknowledgements', () =>
    refuses(
      ['redis.bundled.enabled=false', 'redis.external.topology=cluster', 'redis.external.clusterNodes={r:6379}', 'redis.external.ackReplicas=1'],
      /\/redis\/external\/ackReplicas/,
    ));
  it("an existing ACL Secret without the processes' credential Secrets", () =>
    refuses(['redis.bundled.aclExistingSecret=acl'], /\/redis\/credentials\/existingSecrets/));
  it('a container without a memory limit', () => refuses(['receiver.resources.limits=null'], /\/receiver\/resources/));
  it('a node agent rollout that is neither a count nor a percentage', () => refuses(['nodeAgent.maxUnavailable=all'], /\/nodeAgent\/maxUnavailable/));
  it('a Secret name Kubernetes would refuse', () => refuses(['webhookToken.existingSecret=My_Token'], /\/webhookToken\/existingSecret/));
  it('a placement that is not true or false', () => refuses(['placement.avoidAgentNodes=maybe'], /\/placement\/avoidAgentNodes/));

  it('knows exactly the runbooks of src/core/catalogue/jobs.ts', () => {
    const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as {
      properties: { config: { properties: { runbookModes: { propertyNames: { enum: string[] } } } } };
    };
    expect(schema.properties.config.properties.runbookModes.propertyNames.enum).toEqual([...RUNBOOKS]);
  });
});

describe('values.yaml', { timeout: 60_000 }, () => {
  it('documents every key: a comment on its line or just above it', () => {
    // Line by line: a key whose line has no comment needs a comment line right above it. Leaves of
    // a few self-explaining groups (resources' requests/limits, an image's parts, the three
    // processes' Secret names) share the comment of their group.
    const lines = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8').split('\n');
    const stack: Array<{ indent: number; key: string }> = [];
    const undocumented: string[] = [];
    lines.forEach((line, i) => {
      const m = /^(\s*)(?:- )?([A-Za-z0-9_./-]+):/.exec(line);
      if (!m || line.trimStart().startsWith('#')) return;
      const indent = m[1]!.length;
      while (stack.length > 0 && stack.at(-1)!.indent >= indent) stack.pop();
      const parent = stack.map((s) => s.key).join('.');
      stack.push({ indent, key: m[2]! });
      const path = parent ? `${parent}.${m[2]}` : m[2]!;
      const inGroup = /(^|\.)(resources|requests|limits|image|existingSecrets|caSecret|sentinelPasswordSecret|nodeSelector|tolerations)$/.test(parent);
      const documented = / #/.test(line) || /^\s*#/.test(lines[i - 1] ?? '');
      if (!documented && !inGroup) undocumented.push(path);
    });
    expect(undocumented).toEqual([]);
  });
});

describe('the Secrets the chart makes (its secrets hook Job, run here against a store in memory)', { timeout: 60_000 }, () => {
  const objects = rendered('defaults');
  const store = new MemoryObjectStore();
  const made = ensureSecrets(secretsSpec(objects)!, store);
  const data = async (name: string, kind: 'Secret' | 'ConfigMap' = 'Secret'): Promise<Record<string, string>> => {
    await made;
    return store.data(kind, name);
  };

  it("the bundled Redis' ACL file is files/users.acl.template rendered with the passwords in the processes' Secrets", async () => {
    const passwords = Object.fromEntries(await Promise.all(COMPONENTS.map(async (c) => [c, (await data(`volume-medic-redis-${c}`))['password']!]))) as Record<
      (typeof COMPONENTS)[number],
      string
    >;
    expect((await data('volume-medic-redis-acl'))['users.acl']).toBe(renderRedisAcl({ prefix: 'volume-medic', passwords }));
    for (const c of COMPONENTS) {
      const s = await data(`volume-medic-redis-${c}`);
      expect(s['url']).toBe(`redis://volume-medic-${c}:${passwords[c]}@volume-medic-redis.volume-medic.svc:6379`);
      expect(s['username']).toBe(`volume-medic-${c}`);
      expect(passwords[c]).toMatch(/^[A-Za-z0-9]{48}$/);
    }
    expect(new Set(Object.values(passwords)).size).toBe(3);
  });

  it('a webhook token of 48 characters and one signing key per role, 32 random bytes each', async () => {
    expect((await data('volume-medic-webhook-token'))['token']).toMatch(/^[A-Za-z0-9]{48}$/);
    for (const role of COMPONENTS) {
      const keys = await data(`volume-medic-signing-${role}`);
      expect(Object.keys(keys)).toEqual([`${role}.helm`]);
      expect(Buffer.from(keys[`${role}.helm`]!.trim(), 'base64')).toHaveLength(32);
    }
  });

  it('exactly the Secrets and ConfigMaps the pods mount and that no values name, each kept (helm.sh/resource-policy: keep) and made once: a second run changes nothing', async () => {
    await made;
    expect([...store.objects.keys()].sort()).toEqual([
      'ConfigMap/volume-medic-control-certs',
      'ConfigMap/volume-medic-receiver-ca',
      'Secret/volume-medic-control-signing',
      'Secret/volume-medic-receiver-tls',
      'Secret/volume-medic-redis-acl',
      'Secret/volume-medic-redis-cluster-worker',
      'Secret/volume-medic-redis-node-agent',
      'Secret/volume-medic-redis-receiver',
      'Secret/volume-medic-redis-tls',
      'Secret/volume-medic-signing-cluster-worker',
      'Secret/volume-medic-signing-node-agent',
      'Secret/volume-medic-signing-receiver',
      'Secret/volume-medic-webhook-token',
    ]);
    for (const o of store.objects.values()) expect(o.metadata.annotations, o.metadata.name).toEqual({ 'helm.sh/resource-policy': 'keep' });
    const before = structuredClone([...store.objects.entries()]);
    const writes = store.writes.length;
    const again = await ensureSecrets(secretsSpec(objects)!, store);
    expect(again.every((r) => r.outcome === 'kept')).toBe(true);
    expect(store.writes.length).toBe(writes);
    expect([...store.objects.entries()]).toEqual(before);
  });

  it('none with existingSecret names, and the pods mount the named ones', () => {
    const own = rendered('existing-secrets');
    expect(own.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).toEqual([]);
    expect(secretsSpec(own), 'no secrets hook Job: nothing to make').toBeUndefined();
    const receiver = podSpec(find(own, 'Deployment', 'volume-medic-receiver'))!;
    expect(receiver.volumes?.find((v) => v.name === 'webhook-token')?.secret?.secretName).toBe('my-webhook-token');
    expect(receiver.volumes?.find((v) => v.name === 'tls')?.secret?.secretName).toBe('my-receiver-tls');
    const agent = podSpec(find(own, 'DaemonSet', 'volume-medic-node-agent'))! as unknown as {
      volumes: Array<{ name: string; projected?: { sources: Array<{ secret: { name: string } }> } }>;
    };
    // The agent holds no signing key (its node's work keys come from enrolment); the receiver every root, the cluster worker its own.
    expect(agent.volumes.find((v) => v.name === 'signing-keys')).toBeUndefined();
    expect(
      (
        receiver.volumes!.find((v) => v.name === 'signing-keys') as unknown as {
          projected: { sources: Array<{ secret: { name: string } }> };
        }
      ).projected.sources.map((s) => s.secret.name),
    ).toEqual(['my-signing-receiver', 'my-signing-cluster-worker', 'my-signing-node-agent']);
    const worker = podSpec(find(own, 'Deployment', 'volume-medic-cluster-worker'))!;
    expect(
      (
        worker.volumes!.find((v) => v.name === 'signing-keys') as unknown as { projected: { sources: Array<{ secret: { name: string } }> } }
      ).projected.sources.map((s) => s.secret.name),
    ).toEqual(['my-signing-cluster-worker']);
    const redis = podSpec(find(own, 'StatefulSet', 'volume-medic-redis'))!;
    expect(redis.volumes?.find((v) => v.name === 'acl')?.secret?.secretName).toBe('my-redis-acl');
    expect(redis.volumes?.find((v) => v.name === 'tls')?.secret?.secretName).toBe('my-redis-tls');
    expect(receiver.volumes?.find((v) => v.name === 'control-key')?.secret?.secretName).toBe('my-control-signing');
    expect((agent.volumes.find((v) => v.name === 'control-certs') as unknown as { configMap: { name: string } }).configMap.name).toBe('my-control-certs');
    expect(receiver.volumes?.find((v) => v.name === 'redis-ca')?.secret?.secretName).toBe('my-redis-tls');
  });
});

describe('checksum annotations roll the pods when their configuration changes', { timeout: 60_000 }, () => {
  const annotations = (set: string[], kind: string, name: string): Record<string, string> => {
    const o = find(helmTemplate({ set, values: [join(CI_VALUES_DIR, 'existing-secrets-values.yaml')] }), kind, name);
    return (o['spec'] as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations;
  };
  const workloads = [
    ['Deployment', 'volume-medic-receiver'],
    ['Deployment', 'volume-medic-cluster-worker'],
    ['DaemonSet', 'volume-medic-node-agent'],
  ] as const;

  it("a ConfigMap change (a runbook to enforce) changes every workload's pod template", () => {
    for (const [kind, name] of workloads) {
      const before = annotations([], kind, name);
      const after = annotations(['config.runbookModes.local-pv-placeholder=enforce'], kind, name);
      expect(before['checksum/config'], name).toMatch(/^[0-9a-f]{64}$/);
      expect(after['checksum/config'], name).not.toBe(before['checksum/config']);
    }
  });

  it('a different Secret name changes it too; a change elsewhere (replicas) does not', () => {
    const [kind, name] = workloads[2];
    const before = annotations([], kind, name);
    expect(annotations(['webhookToken.existingSecret=other-token'], kind, name)['checksum/secrets']).not.toBe(before['checksum/secrets']);
    expect(annotations(['receiver.replicas=3'], kind, name)).toEqual(before);
  });
});

describe('what a values file an operator writes can set', { timeout: 60_000 }, () => {
  it('per-runbook modes, scheduling of the agent and extra settings reach the objects', () => {
    const file = join(tmp, 'mine.yaml');
    writeFileSync(
      file,
      [
        'config:',
        '  runbookModes: {local-pv-placeholder: enforce, residual-multipath-cleanup: enforce}',
        '  extraEnv: {RBD_FENCING: "off"}',
        'nodeAgent:',
        '  priorityClassName: storage-critical',
        '  nodeSelector: {storage: "yes", volume-medic.io/node-agent: null}',
        '',
      ].join('\n'),
    );
    const objects = helmTemplate({ values: [file] });
    const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
    expect(data['RUNBOOK_MODES']).toBe('local-pv-placeholder=enforce,residual-multipath-cleanup=enforce');
    expect(data['RBD_FENCING']).toBe('off');
    const agent = podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))! as unknown as {
      priorityClassName: string;
      nodeSelector: Record<string, string>;
    };
    expect(agent.priorityClassName).toBe('storage-critical');
    // Helm merges maps with the defaults: a default key goes only when set to null.
    expect(agent.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', storage: 'yes' });
  });
});

describe("defaults that do not get in an operator's way", { timeout: 60_000 }, () => {
  it('one receiver replica renders no PodDisruptionBudget (minAvailable 1 would block every drain); two do', () => {
    expect(helmTemplate({ set: ['receiver.replicas=1'] }).filter((o) => o.kind === 'PodDisruptionBudget')).toEqual([]);
    expect(
      helmTemplate()
        .filter((o) => o.kind === 'PodDisruptionBudget')
        .map((o) => o.metadata.name),
    ).toEqual(['volume-medic-receiver']);
  });

  it('the node agent takes affinity, and the bundled Redis pull secrets, a priority class and affinity, as the other workloads do', () => {
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'storage', operator: 'In', values: ['yes'] }] }],
        },
      },
    };
    const file = join(tmp, 'scheduling.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        imagePullSecrets: ['regcred'],
        nodeAgent: { affinity },
        redis: { bundled: { affinity, priorityClassName: 'storage-critical' } },
      }),
    );
    const objects = helmTemplate({ values: [file] });
    const agent = podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))! as unknown as { affinity: unknown };
    expect(agent.affinity).toEqual(affinity);
    const redis = podSpec(find(objects, 'StatefulSet', 'volume-medic-redis'))! as unknown as {
      affinity: unknown;
      priorityClassName: string;
      imagePullSecrets: unknown;
    };
    // Redis's own term, ANDed with staying off agent-enabled nodes (placement.avoidAgentNodes).
    const avoided = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: 'storage', operator: 'In', values: ['yes'] },
                { key: 'volume-medic.io/node-agent', operator: 'NotIn', values: ['enabled'] },
              ],
            },
          ],
        },
      },
    };
    expect(redis).toMatchObject({ affinity: avoided, priorityClassName: 'storage-critical', imagePullSecrets: [{ name: 'regcred' }] });
  });
});

describe('placement: the control plane stays off the nodes the node agent runs on', { timeout: 60_000 }, () => {
  const linux = { 'kubernetes.io/os': 'linux' };
  const agentNode: TestNode = { name: 'storage-1', labels: { ...linux, 'volume-medic.io/node-agent': 'enabled' } };
  const plainNode: TestNode = { name: 'worker-1', labels: linux };
  const disabledNode: TestNode = { name: 'storage-2', labels: { ...linux, 'volume-medic.io/node-agent': 'disabled' } };
  const pods = (objects: ReturnType<typeof helmTemplate>): Array<[string, PodSpec]> =>
    CONTROL_PLANE.flatMap(([kind, name]) => {
      const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
      return o ? [[name, podSpec(o)!] as [string, PodSpec]] : [];
    });

  it('in every values set, none of the receiver, cluster worker, bundled Redis, secrets Job and uninstall check may run where the agent runs; each may run on a node without it', () => {
    for (const set of SETS) {
      const objects = rendered(set);
      const agent = podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))!;
      // A node labelled as this set's agent wants it (the monitoring set adds a label of its own).
      const agentsNode: TestNode = { name: 'storage-1', labels: { ...agentNode.labels, ...agent.nodeSelector } };
      const offNode: TestNode = { name: 'storage-2', labels: { ...agentsNode.labels, ...disabledNode.labels } };
      expect(schedulableOn(agent, agentsNode), set).toBe(true);
      expect(schedulableOn(agent, plainNode), set).toBe(false);
      expect(schedulableOn(agent, offNode), set).toBe(false);
      const found = pods(objects);
      expect(found.length, set).toBeGreaterThanOrEqual(2);
      for (const [name, spec] of found) {
        expect(schedulableOn(spec, agentsNode), `${set} ${name} on an agent's node`).toBe(false);
        expect(schedulableOn(spec, plainNode), `${set} ${name}`).toBe(true);
        expect(schedulableOn(spec, offNode), `${set} ${name}`).toBe(true);
      }
    }
    // The default render: all of them, each with exactly this one required term.
    const defaults = pods(rendered('defaults'));
    expect(defaults.map(([name]) => name)).toEqual(CONTROL_PLANE.map(([, name]) => name));
    for (const [name, spec] of defaults) {
      expect(spec.affinity, name).toEqual({
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'volume-medic.io/node-agent', operator: 'NotIn', values: ['enabled'] }] }],
          },
        },
      });
    }
  });

  it('placement.avoidAgentNodes=false (a small cluster where every node runs an agent) renders no affinity of its own', () => {
    const found = pods(helmTemplate({ set: ['placement.avoidAgentNodes=false'] }));
    expect(found).toHaveLength(CONTROL_PLANE.length);
    for (const [name, spec] of found) {
      expect(spec.affinity, name).toBeUndefined();
      expect(schedulableOn(spec, agentNode), name).toBe(true);
    }
  });

  it("is ANDed with each workload's own nodeSelector, tolerations and affinity, which stay as given", () => {
    const own = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'tier', operator: 'In', values: ['infra'] }] },
            { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
          ],
        },
        preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } }],
      },
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'x' } } } },
        ],
      },
    };
    const tolerations = [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }];
    const scheduling = { nodeSelector: { zone: 'a' }, tolerations, affinity: own };
    const file = join(tmp, 'placement.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        // The agent on nodes labelled storage=yes as well as the chart's label: an agent node has both.
        nodeAgent: { nodeSelector: { storage: 'yes' } },
        receiver: scheduling,
        clusterWorker: scheduling,
        redis: { bundled: scheduling },
        secretsJob: scheduling,
        uninstall: { checkJob: scheduling },
      }),
    );
    const objects = helmTemplate({ values: [file] });
    const agent = podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))!;
    const agentLabels = { 'volume-medic.io/node-agent': 'enabled', storage: 'yes' };
    const nodes: Array<[TestNode, boolean]> = [
      [{ name: 'n2', labels: { ...linux, zone: 'a', tier: 'infra' } }, true],
      [{ name: 'n3', labels: { ...linux, zone: 'a', tier: 'infra', ...agentLabels } }, false],
      [{ name: 'n4', labels: { ...linux, zone: 'a', tier: 'infra', storage: 'yes' } }, true],
      [{ name: 'n5', labels: { ...linux, zone: 'a', tier: 'infra', 'volume-medic.io/node-agent': 'enabled' } }, true],
      [{ name: 'n6', labels: { ...linux, zone: 'a', tier: 'web' } }, false],
      [{ name: 'n1', labels: { ...linux, zone: 'a' } }, true],
      [{ name: 'n1', labels: { ...linux, zone: 'a', ...agentLabels } }, false],
      [{ name: 'n7', labels: { ...linux, tier: 'infra' } }, false],
    ];
    const found = pods(objects);
    expect(found).toHaveLength(CONTROL_PLANE.length);
    for (const [name, spec] of found) {
      expect(spec.nodeSelector, name).toEqual({ zone: 'a' });
      expect(spec.tolerations, name).toEqual(tolerations);
      expect(spec.affinity?.['podAntiAffinity'], name).toEqual(own.podAntiAffinity);
      expect(spec.affinity?.nodeAffinity?.['preferredDuringSchedulingIgnoredDuringExecution'], name).toEqual(
        own.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution,
      );
      for (const [node, want] of nodes) {
        expect(schedulableOn(spec, node), `${name} on ${node.name} ${JSON.stringify(node.labels)}`).toBe(want);
        expect(schedulableOn(spec, node) && schedulableOn(agent, node), `${name} beside an agent on ${node.name}`).toBe(false);
      }
    }
  });

  it('refuses, naming the way out, a render that would leave them nowhere to run', () => {
    // The agent on every (Linux) node: no node is left without one.
    expect(() => helmTemplate({ set: ['nodeAgent.nodeSelector.volume-medic\\.io/node-agent=null'] })).toThrow(
      /placement\.avoidAgentNodes: nodeAgent\.nodeSelector names no label but kubernetes\.io\/os.*placement\.avoidAgentNodes=false/,
    );
    expect(pods(helmTemplate({ set: ['nodeAgent.nodeSelector.volume-medic\\.io/node-agent=null', 'placement.avoidAgentNodes=false'] }))).toHaveLength(
      CONTROL_PLANE.length,
    );
    // A workload pinned to the agent's nodes.
    expect(() => helmTemplate({ set: ['receiver.nodeSelector.volume-medic\\.io/node-agent=enabled'] })).toThrow(
      /receiver\.nodeSelector selects only nodes the node agent runs on/,
    );
  });
});

describe('images from a mirror and by digest', { timeout: 60_000 }, () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  const images = (objects: ReturnType<typeof helmTemplate>) =>
    Object.fromEntries(objects.flatMap((o) => (podSpec(o)?.containers ?? []).map((c) => [o.metadata.name, c.image])));

  it('global.imageRegistry replaces the registry of every image (ghcr.io, docker.io); a digest wins over the tag', () => {
    expect(images(helmTemplate({ set: ['global.imageRegistry=mirror.example:5000', `image.digest=${digest}`] }))).toEqual({
      'volume-medic-receiver': `mirror.example:5000/volume-medic/volume-medic@${digest}`,
      'volume-medic-cluster-worker': `mirror.example:5000/volume-medic/volume-medic@${digest}`,
      'volume-medic-node-agent': `mirror.example:5000/volume-medic/volume-medic@${digest}`,
      'volume-medic-redis': 'mirror.example:5000/library/redis:7.4',
      'volume-medic-secrets': `mirror.example:5000/volume-medic/volume-medic@${digest}`,
      'volume-medic-uninstall-check': `mirror.example:5000/volume-medic/volume-medic@${digest}`,
    });
    // A repository without a registry host (docker.io's short form) gets the mirror in front.
    expect(images(helmTemplate({ set: ['global.imageRegistry=reg.example/mirror', 'redis.bundled.image.repository=redis'] }))['volume-medic-redis']).toBe(
      'reg.example/mirror/redis:7.4',
    );
  });

  it('global.imagePullSecrets and imagePullSecrets reach every pod, each name once; the bundled Redis takes podAnnotations', () => {
    const file = join(tmp, 'pull.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        global: { imagePullSecrets: ['mirror-cred', 'regcred'] },
        imagePullSecrets: ['regcred'],
        redis: { bundled: { podAnnotations: { 'example.com/team': 'storage' } } },
      }),
    );
    const objects = helmTemplate({ values: [file] });
    for (const o of objects.filter((x) => podSpec(x))) {
      expect((podSpec(o) as unknown as { imagePullSecrets: unknown }).imagePullSecrets, o.metadata.name).toEqual([
        { name: 'mirror-cred' },
        { name: 'regcred' },
      ]);
    }
    const redis = find(objects, 'StatefulSet', 'volume-medic-redis')['spec'] as {
      template: { metadata: { annotations: Record<string, string> } };
    };
    expect(redis.template.metadata.annotations['example.com/team']).toBe('storage');
  });

  it('refuses a mirror that is not a registry host', () => {
    expect(() => helmTemplate({ set: ['global.imageRegistry=https://mirror.example'] })).toThrow(/\/global\/imageRegistry/);
  });
});

describe('the control signing key the chart makes', { timeout: 60_000 }, () => {
  it("signs controls the certificate checks, which every process mounts; an HMAC seal with the receiver's key, a changed record or another subject are refused", async () => {
    const objects = helmTemplate();
    const store = new MemoryObjectStore();
    await ensureSecrets(secretsSpec(objects)!, store);
    const key = store.data('Secret', 'volume-medic-control-signing')['control.key']!;
    const cert = store.data('ConfigMap', 'volume-medic-control-certs')['control.crt']!;
    writeFileSync(join(tmp, 'control.key'), key);
    writeFileSync(join(tmp, 'control.crt'), cert);
    const sealer = controlSealer(join(tmp, 'control.key'));
    const ring = controlKeyring(join(tmp, 'control.crt'));
    const record = { mode: 'enforce', by: 'alice', why: '', at: 'now', gen: 1 };
    const seal = sealer.seal('control', 'mode/runbook/x', record, 60_000);
    expect(seal).toMatchObject({ alg: 'es256', iss: 'receiver' });
    expect(verifySeal(ring, 'control', 'mode/runbook/x', record, seal, Date.now())).toMatchObject({ ok: true });
    expect(verifySeal(ring, 'control', 'mode/runbook/x', { ...record, mode: 'dry-run' }, seal, Date.now())).toMatchObject({
      ok: false,
      reason: 'bad-mac',
    });
    expect(verifySeal(ring, 'control', 'mode/node/y', record, seal, Date.now())).toMatchObject({ ok: false, reason: 'bad-mac' });
    // What a node holds: the receiver's HMAC key (agents verify work with it). Its seal is refused.
    const hmac = sealerOf(keyringFor('receiver', readKeys(writeSigningKeys(undefined, ['receiver'], 'n'))))!.seal('control', 'mode/runbook/x', record, 60_000);
    expect(verifySeal(ring, 'control', 'mode/runbook/x', record, hmac, Date.now())).toMatchObject({ ok: false, reason: 'unknown-key' });
    // Every process reads CONTROL_VERIFY_CERT_FILE from the shared ConfigMap; only the receiver gets the key.
    expect((find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>)['CONTROL_VERIFY_CERT_FILE']).toBe(
      '/etc/volume-medic/controls/control.crt',
    );
    for (const [kind, name] of [
      ['Deployment', 'volume-medic-receiver'],
      ['Deployment', 'volume-medic-cluster-worker'],
      ['DaemonSet', 'volume-medic-node-agent'],
    ] as const) {
      const spec = podSpec(find(objects, kind, name))!;
      expect(
        spec.volumes?.some((v) => v.name === 'control-certs'),
        name,
      ).toBe(true);
      expect(
        spec.volumes?.some((v) => v.name === 'control-key'),
        name,
      ).toBe(name === 'volume-medic-receiver');
    }
  });
});

describe('node-scoped work keys (enrolment)', () => {
  type Env = { name: string; value?: string };
  type Spec = {
    containers: Array<{ env?: Env[]; volumeMounts?: Array<{ name: string; mountPath: string }> }>;
    volumes?: Array<{
      name: string;
      projected?: {
        sources: Array<{ secret?: { name: string }; serviceAccountToken?: { audience: string; expirationSeconds: number; path: string } }>;
      };
    }>;
  };
  const spec = (kind: string, name: string, set = 'defaults'): Spec => podSpec(find(rendered(set), kind, name)) as unknown as Spec;
  const env = (s: Spec): Map<string, string | undefined> => new Map((s.containers[0]!.env ?? []).map((e) => [e.name, e.value]));

  it("the node agent holds no signing key and enrols with its pod's own token, over HTTPS to the receiver", () => {
    const agent = spec('DaemonSet', 'volume-medic-node-agent');
    const e = env(agent);
    expect(e.has('SIGNING_KEYS_DIR')).toBe(false);
    expect(agent.volumes?.some((v) => v.projected?.sources.some((s) => s.secret?.name.includes('signing')))).toBe(false);
    expect(e.get('ENROL_URL')).toBe('https://volume-medic.volume-medic.svc:8080');
    expect(e.get('ENROL_CA_FILE')).toBe('/etc/volume-medic/receiver-ca/ca.crt');
    const token = agent.volumes?.find((v) => v.name === 'enrol-token')?.projected?.sources[0]?.serviceAccountToken;
    expect(token).toEqual({ audience: 'volume-medic', expirationSeconds: 3600, path: 'token' });
    expect(agent.containers[0]!.volumeMounts?.find((m) => m.name === 'enrol-token')?.mountPath).toBe('/var/run/secrets/volume-medic/enrol');
  });

  it("the receiver lets exactly the chart's node agent and cluster worker accounts enrol", () => {
    const e = env(spec('Deployment', 'volume-medic-receiver'));
    expect(e.get('ENROL_NODE_AGENTS')).toBe('volume-medic/volume-medic-node-agent');
    expect(e.get('ENROL_CLUSTER_WORKERS')).toBe('volume-medic/volume-medic-cluster-worker');
    const e2 = env(spec('Deployment', 'volume-medic-cluster-worker'));
    expect(e2.get('ENROL_URL')).toMatch(/^https:\/\//);
  });

  it('by default each node agent gets its own Redis user at enrolment and holds no shared Redis password', () => {
    expect(env(spec('Deployment', 'volume-medic-receiver')).get('REDIS_NODE_USERS')).toBe('true');
    // And each node's keys have a memory budget (redis.nodeBudgetMiB, src/control/fleet/node-redis-budget.ts).
    expect(env(spec('Deployment', 'volume-medic-receiver')).get('NODE_REDIS_BUDGET_MIB')).toBe('32');
    const agent = spec('DaemonSet', 'volume-medic-node-agent');
    const secretRefs = (agent.containers[0]!.env ?? []).filter((e) => (e as { valueFrom?: { secretKeyRef?: unknown } }).valueFrom?.secretKeyRef);
    expect(secretRefs).toEqual([]);
    expect(env(agent).get('REDIS_URL')).toBe('redis://volume-medic-redis.volume-medic.svc:6379');
  });
});

describe("the admission policies that narrow the write port's grants (admissionPolicies)", { timeout: 60_000 }, () => {
  type Policy = {
    spec: {
      failurePolicy: string;
      matchConstraints: { resourceRules: Array<{ apiGroups: string[]; operations: string[]; resources: string[] }> };
      matchConditions: Array<{ expression: string }>;
      variables?: Array<{ name: string; expression: string }>;
      validations: Array<{ expression: string }>;
    };
  };
  const objects = helmTemplate({ namespace: 'storage-ops' });
  const policy = (name: string): Policy['spec'] => (find(objects, 'ValidatingAdmissionPolicy', name) as unknown as Policy).spec;
  const cel = (p: Policy['spec']): string => [...(p.variables ?? []), ...p.validations].map((v) => v.expression).join('\n');

  it('render by default: each policy fails closed, matches one volume-medic ServiceAccount of the release namespace, and has a binding that denies', () => {
    const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
    expect(policies.map((o) => o.metadata.name).sort()).toEqual([
      'volume-medic-cluster-worker-taint-release',
      'volume-medic-node-agent-events',
      'volume-medic-node-agent-own-node-pods',
    ]);
    const accounts: Record<string, string> = {
      'volume-medic-cluster-worker-taint-release': 'volume-medic-cluster-worker',
      'volume-medic-node-agent-events': 'volume-medic-node-agent',
      'volume-medic-node-agent-own-node-pods': 'volume-medic-node-agent',
    };
    for (const p of policies) {
      const spec = (p as unknown as Policy).spec;
      expect(spec.failurePolicy).toBe('Fail');
      expect(spec.matchConditions).toEqual([
        expect.objectContaining({ expression: `request.userInfo.username == 'system:serviceaccount:storage-ops:${accounts[p.metadata.name]}'` }),
      ]);
      expect(find(objects, 'ValidatingAdmissionPolicyBinding', p.metadata.name)['spec']).toEqual({ policyName: p.metadata.name, validationActions: ['Deny'] });
    }
  });

  it("the node agent's pod deletes: the pod as it is (oldObject: a DELETE has no object) must be bound to the node its token names", () => {
    const p = policy('volume-medic-node-agent-own-node-pods');
    expect(p.matchConstraints.resourceRules).toEqual([{ apiGroups: [''], apiVersions: ['v1'], operations: ['DELETE'], resources: ['pods'] }]);
    expect(cel(p)).toContain("request.userInfo.extra['authentication.kubernetes.io/node-name']");
    expect(cel(p)).toContain('oldObject.spec.nodeName == variables.tokenNode[0]');
    expect(cel(p)).not.toMatch(/(^|[^d])object\./i);
  });

  it("the cluster worker's Node updates: one out-of-service taint removed, the other taints, the spec, labels and annotations as they were", () => {
    const p = policy('volume-medic-cluster-worker-taint-release');
    expect(p.matchConstraints.resourceRules).toEqual([{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }]);
    for (const needed of [
      "variables.removed[0].key == 'node.kubernetes.io/out-of-service'",
      'size(variables.newTaints) == size(variables.oldTaints) - 1',
      'variables.newTaints.all(n, variables.oldTaints.exists(t, t == n))',
      'object.spec.unschedulable',
      'object.metadata.labels',
    ]) {
      expect(cel(p)).toContain(needed);
    }
  });

  it('admissionPolicies.enabled=false renders none (the RBAC grants stand alone: docs/threat-model.md)', () => {
    const off = helmTemplate({ set: ['admissionPolicies.enabled=false'] });
    expect(off.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
    expect(off.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'volume-medic-node-agent-writes')).toBe(true);
  });
});
