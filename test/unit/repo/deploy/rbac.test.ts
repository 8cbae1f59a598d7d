import { describe, expect, it } from 'vitest';
import { NAMESPACE, type KObject } from '../../../../scripts/deploy/chart.ts';
import { COMPONENTS, permissionsOf, SERVICE_ACCOUNTS, type Component } from '../../../../src/adapters/kube/rbac.ts';
import { find, rendered, SETS } from '../../../support/manifests.ts';
import { OPERATOR_API_GROUP, OPERATOR_PERMISSIONS } from '../../../../src/control/auth/permissions.ts';

// The chart's RBAC, rendered with every values set, grants each component's ServiceAccount exactly the API calls its code makes
// (src/adapters/kube/rbac.ts, per component; test/int/adapters/kube/kube-rbac.int.test.ts ties that list to the calls
// the code really makes): everything it needs, nothing beyond (no `*`, no Secrets, no writes
// other than Events and the receiver's review objects), and a namespaced grant where the code
// writes in one namespace only.

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

type Subject = { kind: string; name: string; namespace?: string };

/** The ClusterRole NodeHealthCheck aggregates (templates/nhc-remediation-role.yaml). */
const NHC_ROLE = 'volume-medic-ext-remediation';

/**
 * "scope|group/resource verb" for everything bound to a ServiceAccount: a ClusterRoleBinding
 * grants its ClusterRole everywhere ('*'), a RoleBinding grants its Role (or ClusterRole) in the
 * RoleBinding's namespace only.
 */
function grantedTo(objects: readonly KObject[], account: string): Set<string> {
  const out = new Set<string>();
  const role = (kind: string, name: string, namespace: string | undefined): Rule[] => {
    const r = objects.find((o) => o.kind === kind && o.metadata.name === name && (kind === 'ClusterRole' || o.metadata.namespace === namespace));
    if (!r) throw new Error(`a binding refers to ${kind}/${name}, which is not rendered`);
    return (r['rules'] as Rule[] | undefined) ?? [];
  };
  for (const b of objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')) {
    const subjects = (b['subjects'] as Subject[] | undefined) ?? [];
    if (!subjects.some((s) => s.kind === 'ServiceAccount' && s.name === account && s.namespace === NAMESPACE)) continue;
    const ref = b['roleRef'] as { kind: string; name: string };
    const scope = b.kind === 'ClusterRoleBinding' ? '*' : b.metadata.namespace!;
    for (const g of grants(role(ref.kind, ref.name, b.metadata.namespace))) out.add(`${scope}|${g}`);
  }
  return out;
}

/** A Helm hook (the secrets Job and its account): made before install/upgrade, removed after. */
const isHook = (o: KObject): boolean => Boolean((o.metadata['annotations'] as Record<string, string> | undefined)?.['helm.sh/hook']);

describe.each(SETS)('RBAC of the %s values', (set) => {
  const all = rendered(set);
  const hooks = all.filter((o) => isHook(o) && o.metadata.name === 'volume-medic-secrets');
  const uninstallCheck = all.filter((o) => isHook(o) && o.metadata.name === 'volume-medic-uninstall-check');
  // The processes' own objects; the hooks' are checked on their own below.
  const objects = all.filter((o) => !isHook(o));
  const of = (kind: string): KObject[] => objects.filter((o) => o.kind === kind);
  // The operators' ClusterRoles (operatorRoles) grant verbs of volume-medic.io, an API no one
  // serves, to people you bind them to: checked apart, and kept out of the processes' rules.
  const operatorRole = (o: KObject): boolean => /^volume-medic-(viewer|approver|admin)$/.test(o.metadata.name);
  // NodeHealthCheck's share of the chart (nodeHealthCheck.enabled): aggregated into NHC's own role,
  // bound to none of volume-medic's accounts; checked apart below.
  const nhcRole = (o: KObject): boolean => o.metadata.name === NHC_ROLE;
  const clusterRoles = of('ClusterRole').filter((o) => !operatorRole(o) && !nhcRole(o));
  const rules = clusterRoles.flatMap((r) => (r['rules'] as Rule[] | undefined) ?? []);

  it("the operators' ClusterRoles grant on volume-medic.io only, and no binding of the chart uses them", () => {
    const ops = of('ClusterRole').filter(operatorRole);
    expect(ops.map((o) => o.metadata.name).sort()).toEqual(['volume-medic-admin', 'volume-medic-approver', 'volume-medic-viewer']);
    for (const r of ops.flatMap((o) => o['rules'] as Rule[])) expect(r.apiGroups).toEqual(['volume-medic.io']);
    for (const b of [...of('ClusterRoleBinding'), ...of('RoleBinding')])
      expect(ops.map((o) => o.metadata.name)).not.toContain((b['roleRef'] as { name: string }).name);
  });

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

  it.each(COMPONENTS)("the %s's roles grant exactly what its code calls (src/adapters/kube/rbac.ts)", (component: Component) => {
    expect([...grantedTo(objects, SERVICE_ACCOUNTS[component])].sort()).toEqual([...permissionsOf(component, NAMESPACE)].sort());
  });

  it("the node agent writes its jobs' Events in `default` (a Role there) and its steps' Events on pods cluster-wide, held to volume-medic's own by an admission policy", () => {
    const agent = [...grantedTo(objects, SERVICE_ACCOUNTS['node-agent'])];
    const writes = agent.filter((g) => /\/events (create|patch)$/.test(g));
    expect(writes.sort()).toEqual([
      '*|events.k8s.io/events create',
      '*|events.k8s.io/events patch',
      'default|events.k8s.io/events create',
      'default|events.k8s.io/events patch',
    ]);
  });

  it("the write port's two wide grants, a pod delete for the node agent and a Node patch for the cluster worker, and nobody else's; the receiver patches VolumeMedicRemediation status only", () => {
    const writes = (component: Component) =>
      [...grantedTo(objects, SERVICE_ACCOUNTS[component])].filter((g) => / (delete|patch)$/.test(g) && !g.includes('/events '));
    expect(writes('node-agent')).toEqual(['*|/pods delete']);
    expect(writes('cluster-worker')).toEqual(['*|/nodes patch']);
    // The receiver's own records, in its own namespace (below), and NodeHealthCheck's objects' status.
    expect(writes('receiver').sort()).toEqual([
      '*|volume-medic.io/volumemedicremediations/status patch',
      `${NAMESPACE}|volume-medic.io/volumeremediations delete`,
      `${NAMESPACE}|volume-medic.io/volumeremediations/status patch`,
    ]);
  });

  it("NodeHealthCheck's aggregated role (nodeHealthCheck.enabled) reads the templates and manages the remediation objects, on volume-medic.io only, and is bound to no one of the chart", () => {
    const role = of('ClusterRole').find(nhcRole);
    const enabled = set === 'node-healthcheck';
    expect(role !== undefined, set).toBe(enabled);
    if (!role) return;
    expect(role.metadata['labels']).toMatchObject({ 'rbac.ext-remediation/aggregate-to-ext-remediation': 'true' });
    expect(role['aggregationRule']).toBeUndefined();
    expect([...grants(role['rules'] as Rule[])].sort()).toEqual(
      [
        ...['get', 'list', 'watch'].map((v) => `volume-medic.io/volumemedicremediationtemplates ${v}`),
        ...['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'].map((v) => `volume-medic.io/volumemedicremediations ${v}`),
      ].sort(),
    );
    for (const b of [...of('ClusterRoleBinding'), ...of('RoleBinding')]) expect((b['roleRef'] as { name: string }).name).not.toBe(NHC_ROLE);
  });

  it("the receiver keeps its VolumeRemediation records in its own namespace only: create, list, delete, and their status through the subresource, never the object's own patch or update", () => {
    const receiver = [...grantedTo(objects, SERVICE_ACCOUNTS.receiver)].filter((g) => g.includes('volume-medic.io/volumeremediations'));
    expect(receiver.sort()).toEqual([
      `${NAMESPACE}|volume-medic.io/volumeremediations create`,
      `${NAMESPACE}|volume-medic.io/volumeremediations delete`,
      `${NAMESPACE}|volume-medic.io/volumeremediations list`,
      `${NAMESPACE}|volume-medic.io/volumeremediations/status patch`,
    ]);
    for (const c of COMPONENTS.filter((x) => x !== 'receiver'))
      expect(
        [...grantedTo(objects, SERVICE_ACCOUNTS[c])].filter((g) => g.includes('volumeremediations')),
        c,
      ).toEqual([]);
    // People read them (a ClusterRole bound by nobody in the chart); nobody but the receiver writes them.
    const viewer = find(objects, 'ClusterRole', 'volume-medic-records-viewer');
    expect(viewer['rules']).toEqual([{ apiGroups: ['volume-medic.io'], resources: ['volumeremediations'], verbs: ['get', 'list', 'watch'] }]);
    for (const b of [...of('ClusterRoleBinding'), ...of('RoleBinding')])
      expect((b['roleRef'] as { name: string }).name).not.toBe('volume-medic-records-viewer');
  });

  it('the receiver writes its Lease in its own namespace only, through a Role there', () => {
    const receiver = [...grantedTo(objects, SERVICE_ACCOUNTS.receiver)].filter((g) => g.includes('coordination.k8s.io/'));
    expect(receiver.sort()).toEqual([
      `${NAMESPACE}|coordination.k8s.io/leases create`,
      `${NAMESPACE}|coordination.k8s.io/leases get`,
      `${NAMESPACE}|coordination.k8s.io/leases update`,
    ]);
  });

  it("no Secrets, and no writes beyond Events, the receiver's review objects, its Lease, its records, the write port's pod delete and Node patch, and VolumeMedicRemediation status", () => {
    const all = [...rules, ...of('Role').flatMap((x) => (x['rules'] as Rule[] | undefined) ?? [])];
    for (const g of grants(all)) {
      expect(g).not.toMatch(/\/secrets /);
      const [resource, verb] = g.split(' ') as [string, string];
      if (!['get', 'list', 'watch'].includes(verb) && !['/pods delete', '/nodes patch', 'volume-medic.io/volumemedicremediations/status patch'].includes(g)) {
        expect(resource).toMatch(
          /^((events\.k8s\.io)?\/events|authentication\.k8s\.io\/tokenreviews|authorization\.k8s\.io\/subjectaccessreviews|coordination\.k8s\.io\/leases|volume-medic\.io\/volumeremediations(\/status)?)$/,
        );
      }
    }
  });

  it('each process runs as its own ServiceAccount, bound only to volume-medic roles', () => {
    const accounts = of('ServiceAccount')
      .map((s) => s.metadata.name)
      .sort();
    expect(accounts).toEqual(['volume-medic-cluster-worker', 'volume-medic-node-agent', 'volume-medic-receiver']);
    const used = objects.flatMap((o) => {
      const spec = (o['spec'] as { template?: { spec?: { serviceAccountName?: string } } } | undefined)?.template?.spec;
      return spec && o.metadata.name !== 'volume-medic-redis' ? [spec.serviceAccountName] : [];
    });
    expect(used.sort()).toEqual(accounts);
    const roleNames = new Set([...clusterRoles, ...of('Role')].map((c) => `${c.kind}/${c.metadata.name}`));
    for (const b of [...of('ClusterRoleBinding'), ...of('RoleBinding')]) {
      const ref = b['roleRef'] as { kind: string; name: string };
      expect(roleNames.has(`${ref.kind}/${ref.name}`), `${b.metadata.name} binds ${ref.kind}/${ref.name}`).toBe(true);
      for (const s of b['subjects'] as { kind: string; name: string; namespace?: string }[]) {
        expect(s.kind).toBe('ServiceAccount');
        expect(accounts).toContain(s.name);
        expect(s.namespace).toBe(NAMESPACE);
      }
    }
  });

  it('the uninstall check runs before a delete only, may only list placeholders of volume-medic.io (no wildcard), reaches only DNS and the receiver, and is removed once it succeeded', () => {
    // The static manifest for `kubectl apply` (which runs no hooks) leaves it out.
    if (set === 'static') return expect(uninstallCheck).toEqual([]);
    expect(uninstallCheck.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'ClusterRole/volume-medic-uninstall-check',
        'ClusterRoleBinding/volume-medic-uninstall-check',
        'Job/volume-medic-uninstall-check',
        ...(uninstallCheck.some((o) => o.kind === 'NetworkPolicy') ? ['NetworkPolicy/volume-medic-uninstall-check'] : []),
        'ServiceAccount/volume-medic-uninstall-check',
      ].sort(),
    );
    for (const h of uninstallCheck) {
      const a = h.metadata['annotations'] as Record<string, string>;
      expect(a['helm.sh/hook'], h.kind).toBe('pre-delete');
      expect(a['helm.sh/hook-delete-policy'], h.kind).toBe('before-hook-creation,hook-succeeded');
    }
    expect(uninstallCheck.find((o) => o.kind === 'ClusterRole')!['rules']).toEqual([
      { apiGroups: [OPERATOR_API_GROUP], resources: ['placeholders'], verbs: ['list'] },
    ]);
    expect(OPERATOR_PERMISSIONS.placeholders.list).toBeDefined();
    expect(uninstallCheck.find((o) => o.kind === 'ClusterRoleBinding')!['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'volume-medic-uninstall-check', namespace: expect.any(String) },
    ]);
    const policy = uninstallCheck.find((o) => o.kind === 'NetworkPolicy');
    if (policy) {
      const spec = policy['spec'] as { ingress: unknown[]; egress: Array<{ to?: unknown[]; ports: Array<{ port: number }> }> };
      expect(spec.ingress).toEqual([]);
      expect(spec.egress.flatMap((e) => e.ports.map((p) => p.port)).sort()).toEqual([53, 53, 8080]);
      expect(spec.egress.find((e) => e.to)!.to).toEqual([
        { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'volume-medic', 'app.kubernetes.io/component': 'receiver' } } },
      ]);
    }
  });

  it('the secrets hook (when there) may create Secrets and ConfigMaps, and read or patch only those it makes; nothing else, and it is removed once it succeeded', () => {
    if (hooks.length === 0) return;
    // With its NetworkPolicy (nothing in; out to the API server only) where the chart renders policies.
    expect(hooks.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'Job/volume-medic-secrets',
      'NetworkPolicy/volume-medic-secrets',
      'Role/volume-medic-secrets',
      'RoleBinding/volume-medic-secrets',
      'ServiceAccount/volume-medic-secrets',
    ]);
    expect(hooks.find((o) => o.kind === 'NetworkPolicy')!['spec']).toEqual({
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'volume-medic', 'app.kubernetes.io/component': 'secrets' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        {
          ports: [
            { port: 443, protocol: 'TCP' },
            { port: 6443, protocol: 'TCP' },
          ],
        },
      ],
    });
    for (const h of hooks) {
      const a = h.metadata['annotations'] as Record<string, string>;
      expect(a['helm.sh/hook'], h.kind).toBe('pre-install,pre-upgrade');
      expect(a['helm.sh/hook-delete-policy'], h.kind).toBe('before-hook-creation,hook-succeeded');
    }
    const job = hooks.find((o) => o.kind === 'Job')!;
    const spec = JSON.parse(
      (job['spec'] as { template: { spec: { containers: Array<{ env: Array<{ name: string; value: string }> }> } } }).template.spec.containers[0]!.env.find(
        (e) => e.name === 'SECRETS_SPEC',
      )!.value,
    ) as { items: Array<Record<string, unknown>> };
    const made = (key: string) =>
      spec.items
        .flatMap((i) => [
          i[key],
          ...(key === 'secret' ? [i['aclSecret'], ...((i['users'] as Array<{ secret: string }> | undefined) ?? []).map((u) => u.secret)] : []),
        ])
        .filter((x): x is string => typeof x === 'string');
    const secrets = made('secret');
    const configMaps = [...made('caConfigMap'), ...made('configMap')];
    expect(hooks.find((o) => o.kind === 'Role')!['rules']).toEqual([
      { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: secrets, verbs: ['get', 'patch'] },
      ...(configMaps.length > 0 ? [{ apiGroups: [''], resources: ['configmaps'], resourceNames: configMaps, verbs: ['get', 'patch'] }] : []),
    ]);
    expect([...grantedTo(hooks, 'volume-medic-secrets')].sort()).toEqual(
      [
        `${NAMESPACE}|/configmaps create`,
        `${NAMESPACE}|/configmaps get`,
        `${NAMESPACE}|/configmaps patch`,
        `${NAMESPACE}|/secrets create`,
        `${NAMESPACE}|/secrets get`,
        `${NAMESPACE}|/secrets patch`,
      ].filter((g) => configMaps.length > 0 || (!g.includes('configmaps get') && !g.includes('configmaps patch'))),
    );
  });

  it('the bundled Redis (when there) gets no API token', () => {
    for (const o of objects.filter((x) => x.metadata.name === 'volume-medic-redis' && x.kind === 'StatefulSet')) {
      const spec = (o['spec'] as { template: { spec: { automountServiceAccountToken?: boolean } } }).template.spec;
      expect(spec.automountServiceAccountToken).toBe(false);
    }
  });
});
