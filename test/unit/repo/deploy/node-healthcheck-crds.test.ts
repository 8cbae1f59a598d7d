import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type JobView, remediationStatus } from '../../../../src/control/watches/remediation-status.ts';
import { crdValidator } from '../../../testkit/crd-schema.ts';
import { find, podSpec, rendered } from '../../../support/manifests.ts';

// nodeHealthCheck.enabled renders medik8s' External Remediation CRDs as NodeHealthCheck expects
// them (docs/node-healthcheck.md, "Sources"), kept across uninstall, and the receiver's watch;
// every status the receiver writes, the examples in the docs and an object as NHC makes it pass
// the CRDs' own schemas.

const ON = rendered('node-healthcheck');
const CRDS = ['volumemedicremediationtemplates.volume-medic.io', 'volumemedicremediations.volume-medic.io'];
type Obj = Record<string, any>;
const crd = (name: string): Obj => find(ON, 'CustomResourceDefinition', name) as Obj;
const receiverEnv = (objects: readonly Obj[]) =>
  podSpec(objects.find((o) => o['kind'] === 'Deployment' && o['metadata'].name === 'volume-medic-receiver') as never)!.containers[0]!.env ?? [];
const docsYaml = (): Obj[] => {
  const md = readFileSync(join(import.meta.dirname, '../../../../docs/node-healthcheck.md'), 'utf8');
  return [...md.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) => parseAllDocuments(m[1]!).map((d) => d.toJSON() as Obj));
};

describe('nodeHealthCheck in the chart', () => {
  it('renders nothing of it by default: none of its CRDs, no role for NHC, no watch', () => {
    const off = rendered('defaults');
    expect(off.filter((o) => o.kind === 'CustomResourceDefinition' && CRDS.includes(o.metadata.name))).toEqual([]);
    expect(off.find((o) => o.metadata.name === 'volume-medic-ext-remediation')).toBeUndefined();
    expect(receiverEnv(off as Obj[]).map((e) => e.name)).not.toContain('NODE_HEALTHCHECK');
  });

  it('enabled: both CRDs, kept on uninstall, and the receivers watch', () => {
    for (const name of CRDS) expect(crd(name)['metadata'].annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(receiverEnv(ON as Obj[])).toContainEqual({ name: 'NODE_HEALTHCHECK', value: 'true' });
  });

  it("follows NHC's naming: the template's kind is the remediation's plus Template, same group and version, both namespaced, status a subresource", () => {
    const [template, remediation] = CRDS.map(crd) as [Obj, Obj];
    expect(template['spec'].names.kind).toBe(`${remediation['spec'].names.kind}Template`);
    for (const c of [template, remediation]) {
      expect(c['spec']).toMatchObject({ group: 'volume-medic.io', scope: 'Namespaced' });
      expect(c['spec'].versions.map((v: Obj) => v['name'])).toEqual(['v1alpha1']);
    }
    expect(remediation['spec'].versions[0].subresources).toEqual({ status: {} });
  });

  it("takes the docs' template and NHC's object for it, and refuses a template without spec.template.spec (NHC reads nothing else)", () => {
    const validTemplate = crdValidator(crd(CRDS[0]!));
    const validRemediation = crdValidator(crd(CRDS[1]!));
    const examples = docsYaml();
    const template = examples.find((o) => o['kind'] === 'VolumeMedicRemediationTemplate')!;
    expect(validTemplate(template, undefined)).toEqual([]);
    expect(examples.find((o) => o['kind'] === 'NodeHealthCheck')!['spec'].escalatingRemediations[0].remediationTemplate).toMatchObject({
      apiVersion: 'volume-medic.io/v1alpha1',
      kind: 'VolumeMedicRemediationTemplate',
      name: template['metadata'].name,
      namespace: template['metadata'].namespace,
    });
    // What NHC makes of it (resources/manager.go generateRemediationCR): spec = template.spec.template.spec.
    const made = {
      apiVersion: 'volume-medic.io/v1alpha1',
      kind: 'VolumeMedicRemediation',
      metadata: { name: 'worker-1' },
      spec: template['spec'].template.spec,
    };
    expect(validRemediation(made, undefined)).toEqual([]);
    expect(validTemplate({ ...template, spec: { template: {} } }, undefined).map((e) => e.field)).toEqual(['spec.template.spec']);
    expect(validRemediation({ ...made, spec: { runbook: 'rbd-stale-mapping' } }, undefined).map((e) => e.field)).toEqual(['spec.runbook']);
  });

  it('takes every status the receiver writes, and refuses one a real API server would', () => {
    const valid = crdValidator(crd(CRDS[1]!));
    const base = { apiVersion: 'volume-medic.io/v1alpha1', kind: 'VolumeMedicRemediation', metadata: { name: 'worker-1' }, spec: {} };
    const views: JobView[] = [
      { kind: 'none', reason: 'NodeNotFound', message: 'the cluster has no Node worker-9' },
      { kind: 'withdrawn', jobId: 'nhc_x_0123456789ab', queue: 'vm-node-{worker-1}', reason: 'TimedOutByNHC', message: 'withdrawn' },
      ...(['waiting', 'delayed', 'active', 'failed', 'completed', 'unknown'] as const).map(
        (state): JobView => ({ kind: 'stored', jobId: 'nhc_x_0123456789ab', queue: 'vm-node-{worker-1}', state }),
      ),
    ];
    for (const v of views) expect(valid({ ...base, status: remediationStatus(v, undefined, Date.parse('2026-12-07T13:00:00Z')) }, undefined)).toEqual([]);
    const bad = remediationStatus(views[0]!, undefined, 0);
    bad.conditions[0]!.reason = 'not a reason';
    expect(valid({ ...base, status: bad }, undefined).map((e) => e.field)).toEqual(['status.conditions[0].reason']);
  });
});
