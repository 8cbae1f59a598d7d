import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OVERLAYS, renderKustomization, type KObject } from '../../../scripts/deploy/kustomize.ts';
import { KUBE_RBAC } from '../../../src/kube/rbac.ts';
import { DEPLOY_DIR } from './manifests.ts';

// The rendered RBAC grants exactly what the Kubernetes adapter uses (src/kube/rbac.ts, KUBE_RBAC):
// everything it needs, and nothing cluster-wide beyond it (no `*`, no Secrets, no writes other
// than Events).

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** "group/resource verb" for every permission a set of rules grants. */
function grants(rules: readonly Rule[]): Set<string> {
  const out = new Set<string>();
  for (const r of rules) {
    for (const g of r.apiGroups ?? []) for (const res of r.resources ?? []) for (const v of r.verbs) out.add(`${g}/${res} ${v}`);
  }
  return out;
}

const needed = new Set(KUBE_RBAC.flatMap((n) => n.verbs.map((v) => `${n.apiGroup}/${n.resource} ${v}`)));

describe.each(OVERLAYS)('RBAC of %s', (overlay) => {
  const objects = renderKustomization(join(DEPLOY_DIR, 'overlays', overlay));
  const of = (kind: string): KObject[] => objects.filter((o) => o.kind === kind);
  const clusterRoles = of('ClusterRole');
  const rules = clusterRoles.flatMap((r) => (r['rules'] as Rule[] | undefined) ?? []);

  it('no wildcard, no resourceNames tricks, no non-resource URLs, no aggregation', () => {
    for (const r of [...rules, ...of('Role').flatMap((x) => (x['rules'] as Rule[] | undefined) ?? [])]) {
      expect(r.verbs).not.toContain('*');
      expect(r.apiGroups ?? []).not.toContain('*');
      expect(r.resources ?? []).not.toContain('*');
      expect((r.resources ?? []).some((x) => x.includes('*'))).toBe(false);
      expect(r.nonResourceURLs).toBeUndefined();
    }
    for (const c of clusterRoles) expect(c['aggregationRule']).toBeUndefined();
  });

  it('the ClusterRoles grant exactly what the Kubernetes adapter uses', () => {
    expect([...grants(rules)].sort()).toEqual([...needed].sort());
  });

  it('no Secrets and no writes beyond Events', () => {
    for (const g of grants(rules)) {
      expect(g).not.toMatch(/\/secrets /);
      const [resource, verb] = g.split(' ') as [string, string];
      if (!['get', 'list', 'watch'].includes(verb)) expect(resource).toMatch(/^(events\.k8s\.io)?\/events$/);
    }
  });

  it('each process runs as its own ServiceAccount, bound only to volume-medic roles', () => {
    const accounts = of('ServiceAccount').map((s) => s.metadata.name).sort();
    expect(accounts).toEqual(['volume-medic-cluster-worker', 'volume-medic-node-agent', 'volume-medic-receiver']);
    const used = objects.flatMap((o) => {
      const spec = (o['spec'] as { template?: { spec?: { serviceAccountName?: string } } } | undefined)?.template?.spec;
      return spec && o.metadata.name !== 'volume-medic-redis' ? [spec.serviceAccountName] : [];
    });
    expect(used.sort()).toEqual(accounts);
    const roleNames = new Set(clusterRoles.map((c) => c.metadata.name));
    for (const b of [...of('ClusterRoleBinding'), ...of('RoleBinding')]) {
      const ref = b['roleRef'] as { kind: string; name: string };
      expect(roleNames.has(ref.name), `${b.metadata.name} binds ${ref.kind}/${ref.name}`).toBe(true);
      for (const s of b['subjects'] as { kind: string; name: string; namespace?: string }[]) {
        expect(s.kind).toBe('ServiceAccount');
        expect(accounts).toContain(s.name);
        expect(s.namespace).toBe('volume-medic');
      }
    }
  });

  it('the bundled Redis (when there) gets no API token', () => {
    for (const o of objects.filter((x) => x.metadata.name === 'volume-medic-redis' && x.kind === 'Deployment')) {
      const spec = (o['spec'] as { template: { spec: { automountServiceAccountToken?: boolean } } }).template.spec;
      expect(spec.automountServiceAccountToken).toBe(false);
    }
  });
});
