import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_ACL_SECRET, REDIS_URL_SECRETS } from '../../../../scripts/deploy/redis-acl.ts';
import { configVariables, loadEveryConfig } from '../../../../src/core/config/load.ts';
import { parseAllDocuments } from 'yaml';
import { OPERATOR_API_GROUP, OPERATOR_PERMISSIONS } from '../../../../src/control/auth/permissions.ts';
import { CHART_DIR, helmTemplate, type KObject } from '../../../../scripts/deploy/chart.ts';
import { validateAll } from '../../../testkit/k8s-schema.ts';
import { structuralProblems, type Schema } from '../../../testkit/structural-schema.ts';
import { DEPLOY_DIR, find, podSpec, rendered as render, SETS } from '../../../support/manifests.ts';

// The chart rendered with every CI values set (and deploy/volume-medic.yaml's): every object is
// valid for a current Kubernetes, and each keeps what the installation promises. Chart-level
// checks (lint, schema, package, the rendered file's freshness) are in chart.test.ts.

const rendered = Object.fromEntries(SETS.map((s) => [s, render(s)])) as Record<string, KObject[]>;
const caDir = mkdtempSync(join(tmpdir(), 'vm-render-'));
afterAll(() => rmSync(caDir, { recursive: true, force: true }));
const caFile = join(caDir, 'ca.pem');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
// What the Redis credential files mounted from a process's Secret hold: a sample (a Secret's key ends without a newline).
const sampleFiles: Record<string, string> = {
  REDIS_URL_FILE: 'redis://volume-medic-receiver:p@redis:6379',
  REDIS_PASSWORD_FILE: 'p',
  REDIS_SENTINEL_PASSWORD_FILE: 's',
};
for (const [name, text] of Object.entries(sampleFiles)) writeFileSync(join(caDir, name), text);

type Mounted = { secretName: string; key: string };
/** The Secret and key a file path inside a pod's container comes from, or undefined. */
function mountedSecretFile(o: KObject, containerIndex: number, path: string): Mounted | undefined {
  const spec = podSpec(o)! as unknown as {
    containers: Array<{ volumeMounts?: Array<{ name: string; mountPath: string }> }>;
    volumes?: Array<{ name: string; secret?: { secretName: string; items?: Array<{ key: string; path: string }> } }>;
  };
  for (const m of spec.containers[containerIndex]!.volumeMounts ?? []) {
    if (!path.startsWith(`${m.mountPath}/`)) continue;
    const secret = spec.volumes?.find((v) => v.name === m.name)?.secret;
    const item = secret?.items?.find((i) => i.path === path.slice(m.mountPath.length + 1));
    if (secret && item) return { secretName: secret.secretName, key: item.key };
  }
  return undefined;
}
const volumeMedic = (o: KObject): boolean => !o.metadata.name.startsWith('volume-medic-redis') || o.kind !== 'StatefulSet';

/** The heap limit (MiB) V8 sets for these node flags: this Node's, as the image's (Dockerfile: node:24). */
function v8HeapLimitMiB(flags: readonly string[]): number {
  const out = execFileSync(process.execPath, [...flags, '-p', "require('node:v8').getHeapStatistics().heap_size_limit"], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return Number(out.trim()) / 2 ** 20;
}

describe('every values set', () => {
  it.each(SETS)('%s renders and every object is valid', async (set) => {
    const objects = rendered[set]!;
    expect(objects.length).toBeGreaterThan(10);
    expect(await validateAll(objects)).toEqual([]);
  });

  it("the ServiceMonitor selects the receiver's Service", () => {
    const objects = rendered['monitoring']!;
    const sm = find(objects, 'ServiceMonitor', 'volume-medic');
    const selector = (sm['spec'] as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    expect(find(objects, 'Service', 'volume-medic').metadata['labels']).toMatchObject(selector);
    expect(sm.metadata['labels']).toMatchObject({ release: 'kube-prometheus-stack' });
  });

  it('the PodMonitor scrapes the probe port of the node agents and the cluster worker, under the job names the alerts use', () => {
    const objects = rendered['monitoring']!;
    type Endpoint = {
      port: string;
      path: string;
      relabelings: Array<{ sourceLabels?: string[]; targetLabel: string; replacement?: string }>;
    };
    const pm = find(objects, 'PodMonitor', 'volume-medic-workers');
    const spec = pm['spec'] as {
      selector: { matchLabels: Record<string, string>; matchExpressions: Array<{ key: string; operator: string; values: string[] }> };
      podMetricsEndpoints: Endpoint[];
    };
    expect(pm.metadata['labels']).toMatchObject({ release: 'kube-prometheus-stack' });
    expect(spec.selector.matchExpressions).toEqual([{ key: 'app.kubernetes.io/component', operator: 'In', values: ['node-agent', 'cluster-worker'] }]);
    const [endpoint] = spec.podMetricsEndpoints;
    expect(endpoint).toMatchObject({ port: 'probe', path: '/metrics' });
    expect(endpoint!.relabelings).toContainEqual({
      sourceLabels: ['__meta_kubernetes_pod_label_app_kubernetes_io_component'],
      targetLabel: 'job',
      replacement: 'volume-medic-$1',
    });
    for (const [kind, name] of [
      ['DaemonSet', 'volume-medic-node-agent'],
      ['Deployment', 'volume-medic-cluster-worker'],
    ] as const) {
      const o = find(objects, kind, name);
      const labels = (o['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
      expect(labels, name).toMatchObject(spec.selector.matchLabels);
      expect(spec.selector.matchExpressions[0]!.values, name).toContain(labels['app.kubernetes.io/component']);
    }
    expect(rendered['static']!.some((o) => o.kind === 'PodMonitor')).toBe(false);
  });

  it.each(SETS)('%s: the node agent and the cluster worker are probed on their probe server, on the port PROBE_PORT names', (set) => {
    const objects = rendered[set]!;
    const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
    const config = loadEveryConfig({ PROBE_PORT: data['PROBE_PORT'], PROBE_LISTEN_ADDRESS: data['PROBE_LISTEN_ADDRESS'] });
    expect(config.probeListenAddress).toBe('0.0.0.0');
    for (const [kind, name] of [
      ['DaemonSet', 'volume-medic-node-agent'],
      ['Deployment', 'volume-medic-cluster-worker'],
    ] as const) {
      const c = podSpec(find(objects, kind, name))!.containers[0]! as {
        ports?: Array<{ name: string; containerPort: number }>;
        livenessProbe?: { httpGet?: { path: string; port: string } };
        readinessProbe?: { httpGet?: { path: string; port: string } };
        startupProbe?: { httpGet?: { path: string; port: string } };
      };
      expect(c.ports, name).toEqual([{ name: 'probe', containerPort: config.probePort, protocol: 'TCP' }]);
      expect(c.livenessProbe?.httpGet, name).toEqual({ path: '/healthz', port: 'probe' });
      expect(c.startupProbe?.httpGet, name).toEqual({ path: '/healthz', port: 'probe' });
      expect(c.readinessProbe?.httpGet, name).toEqual({ path: '/readyz', port: 'probe' });
    }
  });
});

describe('what the installation promises', () => {
  type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
  const grants = (rules: readonly Rule[]): string[] =>
    rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}/${v}`)))).sort();
  const roleNames = ['volume-medic-viewer', 'volume-medic-approver', 'volume-medic-admin'];

  it("the operators' ClusterRoles: docs/operator-identity.md's, on verbs the receiver checks; the admin has them all; aggregated only when asked", () => {
    const page = readFileSync(join(DEPLOY_DIR, '..', 'docs', 'operator-identity.md'), 'utf8');
    const block = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('name: volume-medic-viewer'))!;
    const documented = Object.fromEntries(
      parseAllDocuments(block)
        .map((d) => d.toJS() as { metadata: { name: string }; rules: Rule[] })
        .map((r) => [r.metadata.name, grants(r.rules)]),
    );
    const all = Object.entries(OPERATOR_PERMISSIONS)
      .flatMap(([res, verbs]) => Object.keys(verbs).map((v) => `${OPERATOR_API_GROUP}/${res}/${v}`))
      .sort();
    const objects = rendered['static']!;
    for (const name of roleNames) {
      const role = find(objects, 'ClusterRole', name) as KObject & { rules: Rule[] };
      expect(grants(role.rules), name).toEqual(documented[name]);
      for (const g of grants(role.rules)) expect(all, `${name}: ${g}`).toContain(g);
      expect(
        Object.keys(role.metadata['labels'] as Record<string, string>).filter((l) => l.startsWith('rbac.authorization.k8s.io/')),
        name,
      ).toEqual([]);
    }
    expect(grants((find(objects, 'ClusterRole', 'volume-medic-admin') as KObject & { rules: Rule[] }).rules)).toEqual(all);
  });

  // Five helm runs: more than vitest's default 5 s on a loaded machine.
  it("the operators' ClusterRoles aggregate into view and edit only when asked, the admin never", { timeout: 60_000 }, () => {
    const labels = (values: Record<string, boolean>, name: string): string[] => {
      const objects = helmTemplate({
        set: Object.entries(values).map(([k, v]) => `operatorRoles.${k}=${v}`),
        show: ['templates/operator-roles.yaml'],
      });
      return Object.keys(find(objects, 'ClusterRole', name).metadata['labels'] as Record<string, string>)
        .filter((l) => l.startsWith('rbac.authorization.k8s.io/'))
        .sort();
    };
    const agg = (...to: string[]): string[] => to.map((t) => `rbac.authorization.k8s.io/aggregate-to-${t}`).sort();
    expect(labels({ aggregateToView: true }, 'volume-medic-viewer')).toEqual(agg('admin', 'edit', 'view'));
    expect(labels({ aggregateToView: true }, 'volume-medic-approver')).toEqual([]);
    expect(labels({ aggregateToEdit: true }, 'volume-medic-viewer')).toEqual(agg('admin', 'edit'));
    expect(labels({ aggregateToEdit: true }, 'volume-medic-approver')).toEqual(agg('admin', 'edit'));
    expect(labels({ aggregateToView: true, aggregateToEdit: true }, 'volume-medic-admin')).toEqual([]);
    expect(helmTemplate({ set: ['operatorRoles.enabled=false'] }).some((o) => o.kind === 'ClusterRole' && roleNames.includes(o.metadata.name))).toBe(false);
  });

  it('the VolumeRemediation CRD: in every values set, a valid and structural apiextensions.k8s.io/v1 CRD from templates/ (so upgrades upgrade it), kept on uninstall; none, nor RECORDS, with records.enabled=false', {
    timeout: 30_000,
  }, async () => {
    for (const set of SETS) {
      const crd = find(rendered[set]!, 'CustomResourceDefinition', 'volumeremediations.volume-medic.io');
      expect(await validateAll([crd])).toEqual([]);
      expect((crd.metadata['annotations'] as Record<string, string>)['helm.sh/resource-policy']).toBe('keep');
      const versions = (crd['spec'] as { versions: Array<{ schema: { openAPIV3Schema: Schema } }> }).versions;
      for (const v of versions) expect(structuralProblems(v.schema.openAPIV3Schema)).toEqual([]);
    }
    expect(existsSync(join(CHART_DIR, 'crds'))).toBe(false);
    const off = helmTemplate({ set: ['records.enabled=false'] });
    expect(off.filter((o) => o.kind === 'CustomResourceDefinition' || o.metadata.name.includes('records'))).toEqual([]);
    const receiver = podSpec(find(off, 'Deployment', 'volume-medic-receiver'))!.containers[0]!;
    expect(receiver.env?.find((e) => e.name === 'RECORDS')?.value).toBe('false');
  });

  it('the AlertmanagerConfig routes the node-recovery alerts to the receiver with the webhook token, only when enabled', () => {
    type Am = {
      route: { receiver: string; matchers: Array<{ name: string; matchType: string; value: string }>; continue: boolean };
      receivers: Array<{
        name: string;
        webhookConfigs: Array<{
          url: string;
          sendResolved: boolean;
          httpConfig: {
            authorization: { credentials: { name: string; key: string } };
            tlsConfig?: { ca: { configMap?: { name: string } } };
          };
        }>;
      }>;
    };
    const objects = rendered['monitoring']!;
    const spec = find(objects, 'AlertmanagerConfig', 'volume-medic')['spec'] as Am;
    const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
    expect(spec.route.matchers).toEqual([{ name: 'alertname', matchType: '=~', value: data['NODE_RECOVERY_ALERTS']!.split(',').join('|') }]);
    expect(spec.route.continue).toBe(true);
    const [hook] = spec.receivers.find((r) => r.name === spec.route.receiver)!.webhookConfigs;
    expect(hook!.url).toMatch(/^https:\/\/volume-medic\.[a-z0-9-]+\.svc:8080\/v1\/alertmanager$/);
    expect(hook!.sendResolved).toBe(true);
    expect(hook!.httpConfig.authorization.credentials).toEqual({ name: 'volume-medic-webhook-token', key: 'token' });
    expect(hook!.httpConfig.tlsConfig?.ca.configMap?.name).toBe('volume-medic-receiver-ca');
    expect(rendered['static']!.some((o) => o.kind === 'AlertmanagerConfig')).toBe(false);
  });

  const modeOf = (objects: KObject[]): string => (find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>)['DEFAULT_MODE'] ?? '';

  it('dry-run is the default; only the enforce values enforce, with a runbook kept in dry-run', () => {
    for (const set of SETS) expect(modeOf(rendered[set]!), set).toBe(set === 'enforce' ? 'enforce' : 'dry-run');
    const data = find(rendered['enforce']!, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
    expect(data['RUNBOOK_MODES']).toBe('rbd-stale-mapping=dry-run');
    // REDIS_TLS_CA_FILE names a mounted file (the bundled Redis's CA): any readable one stands in.
    expect(loadEveryConfig({ ...data, REDIS_URL: 'redis://r:6379', ...(data['REDIS_TLS_CA_FILE'] ? { REDIS_TLS_CA_FILE: caFile } : {}) }).runbookModes).toEqual(
      {
        'rbd-stale-mapping': 'dry-run',
      },
    );
  });

  it('every container of every values set starts with a valid configuration', () => {
    const known = configVariables();
    // Read by others: the Ceph tools, glibc's malloc.
    const external = new Set(['CEPH_CONF', 'MALLOC_ARENA_MAX']);
    for (const [set, objects] of Object.entries(rendered)) {
      const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
      for (const o of objects) {
        const spec = podSpec(o);
        // Not Redis, nor the secrets hook Job (it reads only SECRETS_SPEC: src/control/secrets/main.ts).
        if (!spec || o.metadata.name === 'volume-medic-redis' || o.kind === 'Job') continue;
        for (const c of spec.containers) {
          expect(
            c.envFrom?.map((e) => e.configMapRef?.name),
            `${set} ${o.metadata.name}`,
          ).toEqual(['volume-medic-config']);
          const env: Record<string, string> = { ...data };
          // Values from the pod or a Secret: a sample of what they hold.
          const sample: Record<string, string> = {
            REDIS_URL: 'redis://volume-medic-receiver:p@redis:6379',
            REDIS_USERNAME: 'volume-medic-receiver',
            REDIS_PASSWORD: 'p',
            REDIS_SENTINEL_PASSWORD: 's',
          };
          for (const e of c.env ?? []) env[e.name] = e.value ?? sample[e.name] ?? 'worker-1';
          for (const name of Object.keys(env)) {
            expect(known.has(name) || external.has(name), `${set} ${o.metadata.name}: ${name} is not a setting of src/core/config/sections`).toBe(true);
          }
          delete env['VOLUME_MEDIC_TOKEN_FILE']; // a mounted Secret: the receiver reads it at start
          // Redis credentials mounted from a Secret: a sample file stands in.
          for (const name of Object.keys(sampleFiles)) if (env[name]) env[name] = join(caDir, name);
          if (env['REDIS_TLS_CA_FILE']) env['REDIS_TLS_CA_FILE'] = caFile; // mounted from a Secret; loadConfig reads it
          // The receiver's certificate and key, mounted from a Secret: any readable file stands in.
          if (env['TLS_CERT_FILE']) env['TLS_CERT_FILE'] = caFile;
          if (env['TLS_KEY_FILE']) env['TLS_KEY_FILE'] = caFile;
          expect(() => loadEveryConfig(env), `${set} ${o.metadata.name}`).not.toThrow();
        }
      }
    }
  });

  it('the receiver: 2 replicas, /healthz and /readyz probes, non-root, token from a Secret, behind a Service and a PDB', () => {
    const objects = rendered['static']!;
    const d = find(objects, 'Deployment', 'volume-medic-receiver');
    expect((d['spec'] as { replicas: number }).replicas).toBe(2);
    const spec = podSpec(d)!;
    const c = spec.containers[0]!;
    // Its heap against its memory limit: 'every Node.js container bounds V8's heap' below.
    expect(c.command).toEqual(['node', '--max-old-space-size=384', '--max-semi-space-size=64', 'dist/src/control/main.js']);
    // The image's default command (`docker run` without one) is the receiver's, flags included.
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(DEPLOY_DIR, '..', 'Dockerfile'), 'utf8'));
    expect(JSON.parse(cmd![1]!)).toEqual(c.command);
    expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(c.env?.find((e) => e.name === 'VOLUME_MEDIC_TOKEN_FILE')?.value).toBe('/etc/volume-medic/webhook-token/token');
    expect(spec.volumes?.find((v) => v.name === 'webhook-token')?.secret).toMatchObject({ secretName: 'volume-medic-webhook-token' });
    expect(find(objects, 'Service', 'volume-medic')).toBeDefined();
    expect((find(objects, 'PodDisruptionBudget', 'volume-medic-receiver')['spec'] as { minAvailable: number }).minAvailable).toBe(1);
  });

  it('the node agent: NODE_NAME from spec.nodeName, hostPID, host paths under HOST_ROOT=/host, tolerations, a node selector', () => {
    const spec = podSpec(find(rendered['static']!, 'DaemonSet', 'volume-medic-node-agent'))!;
    const c = spec.containers[0]!;
    expect(c.command).toEqual([
      'node',
      '--lite-mode',
      '--max-semi-space-size=1',
      '--max-old-space-size=128',
      '--bytecode-old-age=1',
      '--compact-on-every-full-gc',
      'dist/node-agent/main.mjs',
    ]);
    expect(c.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'spec.nodeName' } });
    expect(c.env?.find((e) => e.name === 'HOST_ROOT')?.value).toBe('/host');
    expect(c.env?.find((e) => e.name === 'MALLOC_ARENA_MAX')?.value).toBe('1');
    expect(spec.hostPID).toBe(true);
    expect(spec.hostNetwork).toBeUndefined();
    const hostPaths = Object.fromEntries((spec.volumes ?? []).filter((v) => v.hostPath).map((v) => [v.name, v.hostPath!.path]));
    const mounts = Object.fromEntries((c.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    for (const p of ['/dev', '/sys', '/proc', '/etc/multipath', '/run/udev', '/var/lib/volume-medic']) {
      const volume = mounts[`/host${p}`];
      expect(volume, `/host${p} is mounted`).toBeDefined();
      expect(hostPaths[volume!]).toBe(p);
    }
    expect(Object.values(hostPaths)).not.toContain('/');
  });

  it('the node agent mounts only the host paths its runbooks use, read-only where they only read', () => {
    const spec = podSpec(find(rendered['static']!, 'DaemonSet', 'volume-medic-node-agent'))!;
    const c = spec.containers[0]!;
    const hostPaths = Object.fromEntries((spec.volumes ?? []).filter((v) => v.hostPath).map((v) => [v.name, v.hostPath!.path]));
    expect(Object.values(hostPaths).sort()).toEqual(['/dev', '/etc/multipath', '/proc', '/run/udev', '/sys', '/var/lib/volume-medic']);
    // rbd-unmap's umount runs in the host's mount namespace (nsenter): no kubelet directory in the pod.
    expect(c.env?.find((e) => e.name === 'HOST_NSENTER')?.value).toBe('true');
    const writable = (c.volumeMounts ?? []).filter((m) => hostPaths[m.name] && !(m as { readOnly?: boolean }).readOnly).map((m) => hostPaths[m.name]);
    // What the runbooks write: the placeholder's by-id link, sysfs delete/remove files, STATE_DIR.
    expect([...new Set(writable)].sort()).toEqual(['/dev', '/sys', '/var/lib/volume-medic']);
    for (const m of c.volumeMounts ?? []) expect((m as { mountPropagation?: string }).mountPropagation, m.mountPath).toBeUndefined();
    expect(spec.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(spec.nodeSelector).toMatchObject({ 'volume-medic.io/node-agent': 'enabled' });
  });

  it("a NetworkPolicy for each process: in only to the receiver's port, out only to DNS, the API server, Redis (and Ceph for the cluster worker; the receiver's port for enrolment)", () => {
    type Port = { port: number | string; endPort?: number; protocol: string };
    type Policy = {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress?: Array<{ from?: unknown[]; ports?: Port[] }>;
      egress?: Array<{ to?: unknown[]; ports?: Port[] }>;
    };
    const ports = (rules: Array<{ ports?: Port[] }> | undefined): string[] =>
      (rules ?? [])
        .flatMap((r) => {
          expect(r.ports, 'a rule without ports allows every port').toBeDefined();
          return r.ports!.map((p) => `${p.protocol}/${p.port}${p.endPort ? `-${p.endPort}` : ''}`);
        })
        .sort();
    // Redis: 6379, the ports of an external Sentinel's or Cluster's nodes, or networkPolicy.redisPorts.
    const redisPorts: Record<string, string[]> = { 'external-redis': ['TCP/6380'], sentinel: ['TCP/26379', 'TCP/6379'] };
    const wantOf = (set: string): Record<string, { ingress: string[]; egress: string[] }> => {
      const base = ['TCP/443', 'TCP/53', 'TCP/6443', 'UDP/53', ...(redisPorts[set] ?? ['TCP/6379'])].sort();
      return {
        receiver: { ingress: ['TCP/http'], egress: base },
        // The kubelet's probes and Prometheus' scrape: the probe port only; out to the receiver for enrolment.
        'cluster-worker': { ingress: ['TCP/probe'], egress: [...base, 'TCP/3300', 'TCP/6789', 'TCP/6800-7568', 'TCP/8080'].sort() },
        'node-agent': { ingress: ['TCP/probe'], egress: [...base, 'TCP/8080'].sort() },
      };
    };
    for (const [set, objects] of Object.entries(rendered)) {
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => o['spec'] as Policy);
      for (const [component, w] of Object.entries(wantOf(set))) {
        const mine = policies.filter((p) => p.podSelector.matchLabels?.['app.kubernetes.io/component'] === component);
        expect(mine, `${set}: one policy selects the ${component}`).toHaveLength(1);
        const p = mine[0]!;
        expect(p.policyTypes.sort(), `${set} ${component}`).toEqual(['Egress', 'Ingress']);
        expect(ports(p.ingress), `${set} ${component} ingress`).toEqual(w.ingress);
        expect(ports(p.egress), `${set} ${component} egress`).toEqual(w.egress);
      }
    }
    const redis = find(rendered['defaults']!, 'NetworkPolicy', 'volume-medic-redis')['spec'] as Policy & {
      ingress: Array<{ from: Array<{ podSelector: { matchExpressions: Array<{ key: string; values: string[] }> } }> }>;
    };
    expect(redis.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    expect(redis.egress).toEqual([]);
    expect(redis.ingress).toHaveLength(1);
    expect(redis.ingress[0]!.from).toHaveLength(1);
    expect(redis.ingress[0]!.from[0]!.podSelector.matchExpressions.find((e) => e.key === 'app.kubernetes.io/component')?.values.sort()).toEqual([
      'cluster-worker',
      'node-agent',
      'receiver',
    ]);
  });

  it('the uninstall check (not in the static manifest): a pre-delete Job running the CLI entry point with a projected token, the receiver over HTTPS with its CA, one try; --allow-stranded only when asked', async () => {
    // The static manifest for `kubectl apply` (which runs no hooks) leaves it out.
    expect(rendered['static']!.filter((o) => o.metadata.name === 'volume-medic-uninstall-check')).toEqual([]);
    for (const set of SETS.filter((s) => s !== 'static')) {
      const job = find(rendered[set]!, 'Job', 'volume-medic-uninstall-check');
      expect((job.metadata['annotations'] as Record<string, string>)['helm.sh/hook'], set).toBe('pre-delete');
      expect((job['spec'] as { backoffLimit: number }).backoffLimit).toBe(0);
      const spec = podSpec(job)!;
      const c = spec.containers[0]!;
      expect(c.command, set).toEqual(['node', '--max-old-space-size=48', '--max-semi-space-size=1', 'dist/src/control/cli/main.js']);
      expect(c.args?.slice(-3), set).toEqual(['--token-file', '/var/run/secrets/volume-medic/operator/token', 'uninstall-check']);
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.volumes?.find((v) => v.name === 'operator-token')?.projected?.sources?.[0]?.serviceAccountToken).toMatchObject({ path: 'token' });
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    }
    const defaults = podSpec(find(rendered['defaults']!, 'Job', 'volume-medic-uninstall-check'))!;
    expect(defaults.containers[0]!.args?.[1]).toBe('https://volume-medic.volume-medic.svc:8080');
    expect(defaults.containers[0]!.env).toEqual([{ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/volume-medic/receiver-ca/ca.crt' }]);
    expect(defaults.volumes?.find((v) => v.name === 'receiver-ca')?.configMap?.name).toBe('volume-medic-receiver-ca');
    const allowed = helmTemplate({ set: ['uninstall.allowStrandedPlaceholders=true'] });
    expect(await validateAll(allowed)).toEqual([]);
    expect(podSpec(find(allowed, 'Job', 'volume-medic-uninstall-check'))!.containers[0]!.args?.slice(-2)).toEqual(['uninstall-check', '--allow-stranded']);
  });

  it('nodeAgent.removeHostState: the agents get REMOVE_HOST_STATE_ON_UNINSTALL, the check arms it and may (its only other verb); off by default', async () => {
    const agentEnv = (objects: KObject[]) => podSpec(find(objects, 'DaemonSet', 'volume-medic-node-agent'))!.containers[0]!.env ?? [];
    const check = (objects: KObject[]) => podSpec(find(objects, 'Job', 'volume-medic-uninstall-check'))!.containers[0]!.args ?? [];
    const rules = (objects: KObject[]) => find(objects, 'ClusterRole', 'volume-medic-uninstall-check')['rules'];
    const defaults = rendered['defaults']!;
    expect(agentEnv(defaults).some((e) => e.name === 'REMOVE_HOST_STATE_ON_UNINSTALL')).toBe(false);
    expect(check(defaults)).not.toContain('--arm-host-state-removal');
    const on = helmTemplate({ set: ['nodeAgent.removeHostState=true'] });
    expect(await validateAll(on)).toEqual([]);
    expect(agentEnv(on)).toContainEqual({ name: 'REMOVE_HOST_STATE_ON_UNINSTALL', value: 'true' });
    expect(check(on)).toContain('--arm-host-state-removal');
    expect(rules(on)).toEqual([
      { apiGroups: [OPERATOR_API_GROUP], resources: ['placeholders'], verbs: ['list'] },
      { apiGroups: [OPERATOR_API_GROUP], resources: ['uninstall'], verbs: ['arm'] },
    ]);
  });

  it("every Node.js container bounds V8's heap 64 MiB under its memory limit", () => {
    // Without --max-old-space-size Node sizes the heap from the cgroup's limit itself, and sizes
    // it above it: 259 MiB under a 256Mi limit (Node 24, measured), so V8 would not collect
    // harder before the kernel's OOM killer acts. With the flag, V8's whole heap (old space and
    // the young generation, which the flag leaves out) is V8's own answer for the flags. The room
    // is for what is not heap: anonymous memory outside it measured 11 MiB (node agent) to 26-42
    // MiB (receiver, cluster worker) idle, plus 44-52 MiB of Node's binary in file pages, which
    // the kernel can reclaim under pressure.
    const seen = new Map<string, number>();
    for (const [set, objects] of Object.entries(rendered)) {
      for (const o of objects) {
        for (const c of podSpec(o)?.containers ?? []) {
          if (c.command?.[0] !== 'node') continue;
          const what = `${set} ${o.metadata.name}`;
          const flags = c.command.slice(1, -1);
          expect(
            flags.some((f) => /^--max-old-space-size=\d+$/.test(f)),
            `${what}: --max-old-space-size`,
          ).toBe(true);
          expect(
            flags.some((f) => /^--max-semi-space-size=\d+$/.test(f)),
            `${what}: --max-semi-space-size (64 MiB each by default)`,
          ).toBe(true);
          const limit = String(c.resources?.limits?.['memory']);
          expect(limit, `${what} memory limit`).toMatch(/^\d+Mi$/);
          const key = flags.join(' ');
          const heapMiB = seen.get(key) ?? v8HeapLimitMiB(flags);
          seen.set(key, heapMiB);
          // V8's answer counts the young generation the flag leaves out (384 MiB of old space is
          // a 576 MiB heap): more than the old space, or the flags were not understood.
          const oldSpaceMiB = Number(/^--max-old-space-size=(\d+)$/.exec(flags.find((f) => f.startsWith('--max-old-space-size='))!)![1]);
          expect(heapMiB, `${what}: V8 heap over its ${oldSpaceMiB} MiB old space`).toBeGreaterThan(oldSpaceMiB);
          expect(heapMiB + 64, `${what}: V8 heap ${heapMiB} MiB + 64 under ${limit}`).toBeLessThanOrEqual(Number.parseInt(limit, 10));
        }
      }
    }
    // The three processes and the secrets hook Job.
    expect([...seen.keys()].length).toBe(4);
  });

  it('privileged, hostPID and host paths only in the node agent; every container has resources', () => {
    for (const [set, objects] of Object.entries(rendered)) {
      for (const o of objects) {
        const spec = podSpec(o);
        if (!spec) continue;
        const agent = o.metadata.name === 'volume-medic-node-agent';
        for (const c of spec.containers) {
          expect(c.securityContext?.['privileged'] === true, `${set} ${o.metadata.name}`).toBe(agent);
          expect(c.resources?.requests?.['memory'], `${set} ${o.metadata.name} memory request`).toBeDefined();
          expect(c.resources?.limits?.['memory'], `${set} ${o.metadata.name} memory limit`).toBeDefined();
        }
        if (!agent) {
          expect(spec.hostPID ?? false).toBe(false);
          expect((spec.volumes ?? []).filter((v) => v.hostPath)).toEqual([]);
          expect((o['spec'] as { template: { spec: { securityContext?: { runAsNonRoot?: boolean } } } }).template.spec.securityContext?.runAsNonRoot).toBe(
            true,
          );
        }
      }
    }
  });

  it("Redis credentials come from each process's own Secret as files, never from the ConfigMap; node agents with their own users hold none", () => {
    for (const [set, objects] of Object.entries(rendered)) {
      const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
      expect(
        Object.keys(data).filter((k) => /^REDIS_(URL|USERNAME|PASSWORD|SENTINEL_PASSWORD)(_FILE)?$/.test(k)),
        set,
      ).toEqual([]);
      const topology = data['REDIS_SENTINELS'] ? 'sentinel' : data['REDIS_CLUSTER_NODES'] ? 'cluster' : 'url';
      const nodeUsers = podSpec(find(objects, 'Deployment', 'volume-medic-receiver'))!.containers[0]!.env?.some((e) => e.name === 'REDIS_NODE_USERS');
      for (const [component, kind] of [
        ['receiver', 'Deployment'],
        ['cluster-worker', 'Deployment'],
        ['node-agent', 'DaemonSet'],
      ] as const) {
        const o = find(objects, kind, `volume-medic-${component}`);
        const c = podSpec(o)!.containers[0]!;
        const what = `${set} ${component}`;
        const secret = set === 'existing-secrets' ? `my-redis-${component}` : REDIS_URL_SECRETS[component];
        const value = (name: string) => c.env?.find((e) => e.name === name)?.value;
        const from = (name: string) => c.env?.find((e) => e.name === name)?.valueFrom;
        const file = (name: string) => (value(name) ? mountedSecretFile(o, 0, value(name)!) : undefined);
        for (const name of ['REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD'])
          expect(
            c.env?.some((e) => e.name === name),
            `${what} ${name}`,
          ).toBe(false);
        // redis.nodeUsers (the default): no shared Redis password on a node; the agent's own user comes from enrolment.
        if (component === 'node-agent' && nodeUsers) {
          for (const name of ['REDIS_URL_FILE', 'REDIS_USERNAME', 'REDIS_PASSWORD_FILE'])
            expect(
              c.env?.some((e) => e.name === name),
              `${what} ${name}`,
            ).toBe(false);
          if (topology === 'url') expect(value('REDIS_URL'), set).toMatch(/^redis:\/\/[a-z0-9.-]+:[0-9]+$/);
        } else if (topology === 'url') {
          expect(
            c.env?.some((e) => e.name === 'REDIS_URL'),
            what,
          ).toBe(false);
          expect(file('REDIS_URL_FILE'), what).toEqual({ secretName: secret, key: 'url' });
        } else {
          expect(
            c.env?.some((e) => e.name === 'REDIS_URL' || e.name === 'REDIS_URL_FILE'),
            what,
          ).toBe(false);
          expect(from('REDIS_USERNAME'), what).toEqual({ secretKeyRef: { name: secret, key: 'username' } });
          expect(file('REDIS_PASSWORD_FILE'), what).toEqual({ secretName: secret, key: 'password' });
        }
        if (set === 'sentinel') expect(file('REDIS_SENTINEL_PASSWORD_FILE'), what).toEqual({ secretName: 'redis-sentinel', key: 'password' });
      }
    }
  });

  it("no container's environment holds a password: no Secret's url or password key, no URL with a password", () => {
    for (const [set, objects] of Object.entries(rendered)) {
      for (const o of objects) {
        for (const c of podSpec(o)?.containers ?? []) {
          for (const e of c.env ?? []) {
            const what = `${set} ${o.metadata.name} ${e.name}`;
            const ref = (e.valueFrom as { secretKeyRef?: { key: string } } | undefined)?.secretKeyRef;
            expect(ref === undefined || !/url|password|token/i.test(ref.key), what).toBe(true);
            expect(e.value ?? '', what).not.toMatch(/:\/\/[^/@\s]*:[^/@\s]+@/);
          }
          for (const f of c.envFrom ?? []) expect(Object.keys(f), `${set} ${o.metadata.name}`).toEqual(['configMapRef']);
        }
      }
    }
  });

  it('the image is values.image: one for every volume-medic container, by tag or by digest', () => {
    const images = (set: string): string[] => [
      ...new Set(rendered[set]!.filter(volumeMedic).flatMap((o) => (podSpec(o)?.containers ?? []).map((c) => c.image ?? ''))),
    ];
    expect(images('defaults')).toEqual(['ghcr.io/volume-medic/volume-medic:0.1.0']);
    expect(images('external-redis')).toEqual(['ghcr.io/volume-medic/volume-medic@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef']);
  });

  it('the bundled Redis: noeviction, an append-only file on a claim, maxmemory from the per-node figure, a volume-medic ACL user required', () => {
    const objects = rendered['defaults']!;
    const sts = find(objects, 'StatefulSet', 'volume-medic-redis');
    const spec = podSpec(sts)!;
    const redis = spec.containers[0]!;
    const args = (redis as { args?: string[] }).args ?? [];
    const arg = (name: string): string => args[args.indexOf(name) + 1]!;
    expect(arg('--maxmemory-policy')).toBe('noeviction');
    expect(arg('--appendonly')).toBe('yes');
    // 64 MiB + 100 nodes x 64 KiB = 70.25, rounded up; the container gets twice that (the AOF rewrite's fork).
    expect(arg('--maxmemory')).toBe('71mb');
    expect(redis.resources).toEqual({ requests: { cpu: '50m', memory: '142Mi' }, limits: { memory: '142Mi' } });
    const big = podSpec(find(rendered['bundled-redis']!, 'StatefulSet', 'volume-medic-redis'))!.containers[0]! as unknown as {
      args: string[];
    };
    expect(big.args[big.args.indexOf('--maxmemory') + 1]).toBe(`${64 + 375}mb`);
    // Two connections per agent and 1,000 for the rest, never below Redis' own 10,000; a deeper
    // accept queue for the reconnect after a restart (bench/README.md, reconnect storm).
    expect(arg('--maxclients')).toBe('10000');
    expect(arg('--tcp-backlog')).toBe('4096');
    expect(big.args[big.args.indexOf('--maxclients') + 1]).toBe('13000');
    // Connections' buffers cannot fill Redis: the clients holding the most are closed past a
    // quarter of maxmemory; one value is at most 4 x BODY_LIMIT (16 MiB at least), not 512 MB.
    expect(arg('--maxmemory-clients')).toBe('25%');
    expect(arg('--proto-max-bulk-len')).toBe('16mb');
    const bigBodies = podSpec(find(helmTemplate({ set: ['config.bodyLimit=10000000'], show: ['templates/redis.yaml'] }), 'StatefulSet', 'volume-medic-redis'))!
      .containers[0]! as unknown as { args: string[] };
    expect(bigBodies.args[bigBodies.args.indexOf('--proto-max-bulk-len') + 1]).toBe('40mb');
    // The data directory is the claim's.
    const claims = (
      sts['spec'] as {
        volumeClaimTemplates?: Array<{
          metadata: { name: string };
          spec: { storageClassName?: string; resources: { requests: { storage: string } } };
        }>;
      }
    ).volumeClaimTemplates;
    expect(claims?.map((c) => c.metadata.name)).toEqual([redis.volumeMounts?.find((m) => m.mountPath === arg('--dir'))?.name]);
    expect(spec.volumes?.some((v) => v.name === 'data')).toBe(false);
    const bigClaim = (
      find(rendered['bundled-redis']!, 'StatefulSet', 'volume-medic-redis')['spec'] as {
        volumeClaimTemplates: Array<{ spec: { storageClassName?: string; resources: { requests: { storage: string } } } }>;
      }
    ).volumeClaimTemplates[0]!;
    expect(bigClaim.spec).toMatchObject({ storageClassName: 'fast-ssd', resources: { requests: { storage: '8Gi' } } });
    // The ACL file (default user off) comes from a Secret, mounted read-only where --aclfile reads it.
    const aclFile = arg('--aclfile');
    expect(aclFile).toBe('/etc/redis/acl/users.acl');
    const mount = redis.volumeMounts?.find((m) => aclFile.startsWith(`${m.mountPath}/`)) as { name: string; readOnly?: boolean } | undefined;
    expect(mount?.readOnly).toBe(true);
    expect(spec.volumes?.find((v) => v.name === mount!.name)?.secret?.secretName).toBe(REDIS_ACL_SECRET);
    expect(find(objects, 'Service', 'volume-medic-redis')).toBeDefined();
    for (const set of ['static', 'external-redis', 'sentinel', 'cluster'])
      expect(
        rendered[set]!.some((o) => o.metadata.name.startsWith('volume-medic-redis') && o.kind !== 'Secret'),
        set,
      ).toBe(false);
  });
});
