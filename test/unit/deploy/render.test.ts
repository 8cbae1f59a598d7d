import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_ACL_SECRET, REDIS_URL_SECRETS } from '../../../scripts/deploy/redis-acl.ts';
import { loadConfig } from '../../../src/config/load.ts';
import {
  KustomizeError, OVERLAYS, RENDERED_FILE, readObjects, renderKustomization, renderedFileText, sortObjects, type KObject,
} from '../../../scripts/deploy/kustomize.ts';
import { validateAll } from './k8s-schema.ts';
import { DEPLOY_DIR, find, hasKubectl, kubectlKustomize, plainManifestFiles, podSpec } from './manifests.ts';

// Every overlay renders (in-repo renderer always; `kubectl kustomize` too where installed, and
// the two must agree), every object is valid for a current Kubernetes, and the rendered
// single-file install is in sync.

const rendered = Object.fromEntries(OVERLAYS.map((o) => [o, renderKustomization(join(DEPLOY_DIR, 'overlays', o))])) as Record<(typeof OVERLAYS)[number], KObject[]>;

const tmp = mkdtempSync(join(tmpdir(), 'vm-deploy-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The heap limit (MiB) V8 sets for these node flags: this Node's, as the image's (Dockerfile: node:24). */
function v8HeapLimitMiB(flags: readonly string[]): number {
  const out = execFileSync(process.execPath, [...flags, '-p', "require('node:v8').getHeapStatistics().heap_size_limit"], { encoding: 'utf8', timeout: 10_000 });
  return Number(out.trim()) / 2 ** 20;
}

/** An overlay made on the fly: base + an optional component, as an operator would write it. */
function withComponent(component: string): string {
  const dir = mkdtempSync(join(tmp, 'overlay-'));
  writeFileSync(join(dir, 'kustomization.yaml'), [
    'apiVersion: kustomize.config.k8s.io/v1beta1',
    'kind: Kustomization',
    'resources:',
    `  - ${relative(dir, join(DEPLOY_DIR, 'overlays/dry-run'))}`,
    'components:',
    `  - ${relative(dir, join(DEPLOY_DIR, 'components', component))}`,
    '',
  ].join('\n'));
  return dir;
}

describe('overlays', () => {
  it.each(OVERLAYS)('%s renders and every object is valid', async (overlay) => {
    const objects = rendered[overlay];
    expect(objects.length).toBeGreaterThan(10);
    expect(await validateAll(objects)).toEqual([]);
  });

  it.each(OVERLAYS)('%s: kubectl kustomize gives the same objects in the same order', (overlay) => {
    if (!hasKubectl()) {
      console.warn('kubectl is not installed: comparing with kubectl kustomize skipped; the in-repo render was validated above');
      return;
    }
    expect(kubectlKustomize(join(DEPLOY_DIR, 'overlays', overlay))).toEqual(sortObjects(rendered[overlay]));
  });

  it('the optional ServiceMonitor component renders, validates and agrees with kubectl', async () => {
    const dir = withComponent('service-monitor');
    const objects = renderKustomization(dir);
    const sm = find(objects, 'ServiceMonitor', 'volume-medic');
    expect(await validateAll(objects)).toEqual([]);
    const selector = (sm['spec'] as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    const service = find(objects, 'Service', 'volume-medic');
    expect(service.metadata['labels']).toMatchObject(selector);
    if (hasKubectl()) expect(kubectlKustomize(dir)).toEqual(sortObjects(objects));
  });

  it('deploy/volume-medic.yaml is the rendered dry-run overlay (run `node scripts/deploy/render.ts`)', () => {
    expect(readFileSync(RENDERED_FILE, 'utf8')).toBe(renderedFileText());
    expect(sortObjects(readObjects(RENDERED_FILE))).toEqual(sortObjects(rendered['dry-run']));
  });
});

describe('plain YAML, without any renderer', () => {
  it.each(plainManifestFiles().map((f) => [relative(DEPLOY_DIR, f), f]))('%s: every object is valid', async (_name, file) => {
    const objects = readObjects(file);
    expect(objects.length).toBeGreaterThan(0);
    expect(await validateAll(objects)).toEqual([]);
  });
});

describe('the renderer refuses what it does not implement', () => {
  it('an unknown kustomization field is an error, not ignored', () => {
    const dir = mkdtempSync(join(tmp, 'bad-'));
    writeFileSync(join(dir, 'kustomization.yaml'), 'resources: []\nnamePrefix: x-\n');
    expect(() => renderKustomization(dir)).toThrow(KustomizeError);
  });

  it('a patch whose target matches nothing is an error', () => {
    const dir = mkdtempSync(join(tmp, 'bad-'));
    writeFileSync(join(dir, 'kustomization.yaml'), [
      `resources: [${relative(dir, join(DEPLOY_DIR, 'base'))}]`,
      'patches:',
      '  - target: {kind: ConfigMap, name: nope}',
      '    patch: "[{op: replace, path: /data/X, value: y}]"',
    ].join('\n'));
    expect(() => renderKustomization(dir)).toThrow(/matches nothing/);
  });
});

describe('what the installation promises', () => {
  const modeOf = (objects: KObject[]): string => (find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>)['DEFAULT_MODE'] ?? '';

  it('dry-run is the default; only the enforce overlay enforces', () => {
    expect(modeOf(rendered['dry-run'])).toBe('dry-run');
    expect(modeOf(rendered['with-redis'])).toBe('dry-run');
    expect(modeOf(rendered['enforce'])).toBe('enforce');
  });

  it('every container of every overlay starts with a valid configuration', () => {
    const known = readFileSync(new URL('../../../src/config/load.ts', import.meta.url), 'utf8');
    const external = new Set(['CEPH_CONF']);
    for (const [overlay, objects] of Object.entries(rendered)) {
      const data = find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>;
      for (const o of objects) {
        const spec = podSpec(o);
        if (!spec || o.metadata.name === 'volume-medic-redis') continue;
        for (const c of spec.containers) {
          expect(c.envFrom?.map((e) => e.configMapRef?.name), `${overlay} ${o.metadata.name}`).toEqual(['volume-medic-config']);
          const env: Record<string, string> = { ...data };
          // Values from the pod or a Secret: a sample of what they hold.
          for (const e of c.env ?? []) env[e.name] = e.value ?? (e.name === 'REDIS_URL' ? 'redis://volume-medic-receiver:p@redis:6379' : 'worker-1');
          for (const name of Object.keys(env)) {
            const isSetting = known.includes(`  ${name}: [`) || known.includes(`env['${name}']`);
            expect(isSetting || external.has(name), `${overlay} ${o.metadata.name}: ${name} is not a setting of src/config/load.ts`).toBe(true);
          }
          delete env['VOLUME_MEDIC_TOKEN_FILE']; // a mounted Secret: the receiver reads it at start
          expect(() => loadConfig(env), `${overlay} ${o.metadata.name}`).not.toThrow();
        }
      }
    }
  });

  it('the receiver: 2 replicas, /healthz and /readyz probes, non-root, token from a Secret, behind a Service and a PDB', () => {
    const objects = rendered['dry-run'];
    const d = find(objects, 'Deployment', 'volume-medic-receiver');
    expect((d['spec'] as { replicas: number }).replicas).toBe(2);
    const spec = podSpec(d)!;
    const c = spec.containers[0]!;
    // Its heap against its memory limit: 'every Node.js container bounds V8's heap' below.
    expect(c.command).toEqual(['node', '--max-old-space-size=384', '--max-semi-space-size=64', 'dist/src/main.js']);
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
    const spec = podSpec(find(rendered['dry-run'], 'DaemonSet', 'volume-medic-node-agent'))!;
    const c = spec.containers[0]!;
    expect(c.command).toEqual(['node', '--lite-mode', '--max-semi-space-size=1', '--max-old-space-size=128', 'dist/workers/node-agent/main.js']);
    expect(c.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'spec.nodeName' } });
    expect(c.env?.find((e) => e.name === 'HOST_ROOT')?.value).toBe('/host');
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
    const spec = podSpec(find(rendered['dry-run'], 'DaemonSet', 'volume-medic-node-agent'))!;
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

  it('a NetworkPolicy for each process: in only to the receiver\'s port, out only to DNS, the API server, Redis (and Ceph for the cluster worker)', () => {
    type Port = { port: number | string; endPort?: number; protocol: string };
    type Policy = { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress?: Array<{ from?: unknown[]; ports?: Port[] }>; egress?: Array<{ to?: unknown[]; ports?: Port[] }> };
    const ports = (rules: Array<{ ports?: Port[] }> | undefined): string[] => (rules ?? []).flatMap((r) => {
      expect(r.ports, 'a rule without ports allows every port').toBeDefined();
      return r.ports!.map((p) => `${p.protocol}/${p.port}${p.endPort ? `-${p.endPort}` : ''}`);
    }).sort();
    const base = ['TCP/443', 'TCP/53', 'TCP/6379', 'TCP/6443', 'UDP/53'];
    const want: Record<string, { ingress: string[]; egress: string[] }> = {
      receiver: { ingress: ['TCP/http'], egress: base },
      'cluster-worker': { ingress: [], egress: [...base, 'TCP/3300', 'TCP/6789', 'TCP/6800-7568'].sort() },
      'node-agent': { ingress: [], egress: base },
    };
    for (const [overlay, objects] of Object.entries(rendered)) {
      const policies = objects.filter((o) => o.kind === 'NetworkPolicy').map((o) => o['spec'] as Policy);
      for (const [component, w] of Object.entries(want)) {
        const mine = policies.filter((p) => p.podSelector.matchLabels?.['app.kubernetes.io/component'] === component);
        expect(mine, `${overlay}: one policy selects the ${component}`).toHaveLength(1);
        const p = mine[0]!;
        expect(p.policyTypes.sort(), `${overlay} ${component}`).toEqual(['Egress', 'Ingress']);
        expect(ports(p.ingress), `${overlay} ${component} ingress`).toEqual(w.ingress);
        expect(ports(p.egress), `${overlay} ${component} egress`).toEqual(w.egress);
      }
    }
    const redis = find(rendered['with-redis'], 'NetworkPolicy', 'volume-medic-redis')['spec'] as Policy & { ingress: Array<{ from: Array<{ podSelector: { matchExpressions: Array<{ key: string; values: string[] }> } }> }> };
    expect(redis.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
    expect(redis.egress).toEqual([]);
    expect(redis.ingress).toHaveLength(1);
    expect(redis.ingress[0]!.from).toHaveLength(1);
    expect(redis.ingress[0]!.from[0]!.podSelector.matchExpressions.find((e) => e.key === 'app.kubernetes.io/component')?.values.sort()).toEqual(['cluster-worker', 'node-agent', 'receiver']);
  });

  it('every Node.js container bounds V8\'s heap 64 MiB under its memory limit', () => {
    // Without --max-old-space-size Node sizes the heap from the cgroup's limit itself, and sizes
    // it above it: 259 MiB under a 256Mi limit (Node 24, measured), so V8 would not collect
    // harder before the kernel's OOM killer acts. With the flag, V8's whole heap (old space and
    // the young generation, which the flag leaves out) is V8's own answer for the flags. The room
    // is for what is not heap: anonymous memory outside it measured 11 MiB (node agent) to 26-42
    // MiB (receiver, cluster worker) idle, plus 44-52 MiB of Node's binary in file pages, which
    // the kernel can reclaim under pressure.
    const seen = new Map<string, number>();
    for (const [overlay, objects] of Object.entries(rendered)) {
      for (const o of objects) {
        for (const c of podSpec(o)?.containers ?? []) {
          if (c.command?.[0] !== 'node') continue;
          const what = `${overlay} ${o.metadata.name}`;
          const flags = c.command.slice(1, -1);
          expect(flags.some((f) => /^--max-old-space-size=\d+$/.test(f)), `${what}: --max-old-space-size`).toBe(true);
          expect(flags.some((f) => /^--max-semi-space-size=\d+$/.test(f)), `${what}: --max-semi-space-size (64 MiB each by default)`).toBe(true);
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
    expect([...seen.keys()].length).toBe(3);
  });

  it('privileged, hostPID and host paths only in the node agent; every container has resources', () => {
    for (const [overlay, objects] of Object.entries(rendered)) {
      for (const o of objects) {
        const spec = podSpec(o);
        if (!spec) continue;
        const agent = o.metadata.name === 'volume-medic-node-agent';
        for (const c of spec.containers) {
          expect(c.securityContext?.['privileged'] === true, `${overlay} ${o.metadata.name}`).toBe(agent);
          expect(c.resources?.requests?.['memory'], `${overlay} ${o.metadata.name} memory request`).toBeDefined();
          expect(c.resources?.limits?.['memory'], `${overlay} ${o.metadata.name} memory limit`).toBeDefined();
        }
        if (!agent) {
          expect(spec.hostPID ?? false).toBe(false);
          expect((spec.volumes ?? []).filter((v) => v.hostPath)).toEqual([]);
          expect((o['spec'] as { template: { spec: { securityContext?: { runAsNonRoot?: boolean } } } }).template.spec.securityContext?.runAsNonRoot).toBe(true);
        }
      }
    }
  });

  it('REDIS_URL (credentials) comes from each process\'s own Secret, never from the ConfigMap', () => {
    for (const [overlay, objects] of Object.entries(rendered)) {
      expect(Object.keys(find(objects, 'ConfigMap', 'volume-medic-config')['data'] as Record<string, string>), overlay).not.toContain('REDIS_URL');
      for (const [component, kind] of [['receiver', 'Deployment'], ['cluster-worker', 'Deployment'], ['node-agent', 'DaemonSet']] as const) {
        const c = podSpec(find(objects, kind, `volume-medic-${component}`))!.containers[0]!;
        expect(c.env?.find((e) => e.name === 'REDIS_URL')?.valueFrom, `${overlay} ${component}`).toEqual({ secretKeyRef: { name: REDIS_URL_SECRETS[component], key: 'url' } });
      }
    }
  });

  it('the image is named in one place and every volume-medic container uses it', () => {
    const base = readFileSync(join(DEPLOY_DIR, 'base/kustomization.yaml'), 'utf8');
    expect(base).toMatch(/newName: ghcr\.io\/volume-medic\/volume-medic/);
    const images = new Set<string>();
    for (const o of rendered['with-redis']) {
      for (const c of podSpec(o)?.containers ?? []) if (o.metadata.name !== 'volume-medic-redis') images.add(c.image ?? '');
    }
    expect([...images]).toEqual(['ghcr.io/volume-medic/volume-medic:0.1.0']);
  });

  it('with-redis bundles one Redis with maxmemory-policy noeviction that requires a volume-medic ACL user', () => {
    const objects = rendered['with-redis'];
    const spec = podSpec(find(objects, 'Deployment', 'volume-medic-redis'))!;
    const redis = spec.containers[0]!;
    const args = (redis as { args?: string[] }).args ?? [];
    expect(args[args.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
    // The ACL file (default user off) comes from a Secret, mounted read-only where --aclfile reads it.
    const aclFile = args[args.indexOf('--aclfile') + 1]!;
    expect(aclFile).toBe('/etc/redis/acl/users.acl');
    const mount = redis.volumeMounts?.find((m) => aclFile.startsWith(`${m.mountPath}/`)) as { name: string; readOnly?: boolean } | undefined;
    expect(mount?.readOnly).toBe(true);
    expect(spec.volumes?.find((v) => v.name === mount!.name)?.secret?.secretName).toBe(REDIS_ACL_SECRET);
    expect(find(objects, 'Service', 'volume-medic-redis')).toBeDefined();
    expect(rendered['dry-run'].some((o) => o.metadata.name === 'volume-medic-redis')).toBe(false);
  });
});
