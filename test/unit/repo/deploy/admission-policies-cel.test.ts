import { evaluate } from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { helmTemplate } from '../../../../scripts/deploy/chart.ts';
import { find } from '../../../support/manifests.ts';

// The chart's ValidatingAdmissionPolicies evaluated, not only read: each policy's CEL runs on
// admission requests built as kube-apiserver builds them (a DELETE has oldObject and a null
// object), with an independent CEL implementation. It treats objects as plain maps, not
// Kubernetes' typed objects, so `has()` on an absent field and list equality are checked here as
// CEL defines them; a kind cluster is still the final word (docs/threat-model.md).

type Spec = {
  matchConditions?: Array<{ expression: string }>;
  variables?: Array<{ name: string; expression: string }>;
  validations: Array<{ expression: string; message?: string }>;
};

const NS = 'storage-ops';
const objects = helmTemplate({ namespace: NS });
const policy = (name: string): Spec => (find(objects, 'ValidatingAdmissionPolicy', name) as unknown as { spec: Spec }).spec;

type Verdict = 'allow' | 'deny' | 'not matched';
function admit(spec: Spec, ctx: Record<string, unknown>): Verdict {
  for (const c of spec.matchConditions ?? []) if (evaluate(c.expression, ctx) !== true) return 'not matched';
  const variables: Record<string, unknown> = {};
  for (const v of spec.variables ?? []) variables[v.name] = evaluate(v.expression, { ...ctx, variables });
  for (const v of spec.validations) {
    let ok: unknown;
    try {
      ok = evaluate(v.expression, { ...ctx, variables });
    } catch {
      ok = false; // an evaluation error denies (failurePolicy Fail)
    }
    if (ok !== true) return 'deny';
  }
  return 'allow';
}

const agent = `system:serviceaccount:${NS}:volume-medic-node-agent`;
const worker = `system:serviceaccount:${NS}:volume-medic-cluster-worker`;
const NODE_NAME = 'authentication.kubernetes.io/node-name';
const req = (username: string, extra?: Record<string, string[]>) => ({ userInfo: extra ? { username, extra } : { username } });

describe("the node agent's pod deletes (volume-medic-node-agent-own-node-pods)", () => {
  const p = policy('volume-medic-node-agent-own-node-pods');
  const pod = (nodeName?: string) => ({ metadata: { name: 'p' }, spec: nodeName ? { nodeName } : {} });
  it.each([
    ['a pod of its own node', req(agent, { [NODE_NAME]: ['w1'] }), pod('w1'), 'allow'],
    ['a pod of another node', req(agent, { [NODE_NAME]: ['w1'] }), pod('w2'), 'deny'],
    ['an unscheduled pod', req(agent, { [NODE_NAME]: ['w1'] }), pod(), 'deny'],
    ['a token that names no node', req(agent, { other: ['x'] }), pod('w1'), 'deny'],
    ['a token without extra', req(agent), pod('w1'), 'deny'],
    ['anyone else (not matched)', req('system:admin'), pod('w2'), 'not matched'],
  ] as const)('%s: %s', (_what, request, oldObject, want) => {
    expect(admit(p, { request, oldObject, object: null })).toBe(want);
  });
});

describe("the node agent's Events (volume-medic-node-agent-events)", () => {
  const p = policy('volume-medic-node-agent-events');
  it.each([
    ['its own Event', { reportingController: 'volume-medic' }, 'allow'],
    ["one posing as kubelet's", { reportingController: 'kubelet' }, 'deny'],
    ['one without a reporting controller', { reason: 'FailedMount' }, 'deny'],
  ] as const)('%s: %s', (_what, object, want) => {
    expect(admit(p, { request: req(agent, { [NODE_NAME]: ['w1'] }), object, oldObject: null })).toBe(want);
  });
});

describe("the cluster worker's Node updates (volume-medic-cluster-worker-taint-release)", () => {
  const p = policy('volume-medic-cluster-worker-taint-release');
  const OOS = { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute', timeAdded: '2026-12-07T08:00:00Z' };
  const OOS_NOSCHEDULE = { key: 'node.kubernetes.io/out-of-service', effect: 'NoSchedule' };
  const OTHER = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: '2026-12-07T07:00:00Z' };
  type Extra = { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  const node = (taints: unknown[] | undefined, extra: Extra = {}) => ({
    metadata: { name: 'w1', labels: { a: 'b' }, resourceVersion: '1', ...extra.metadata },
    spec: { ...(taints ? { taints } : {}), ...extra.spec },
  });
  it.each([
    ['the taint removed, another kept', node([OOS, OTHER]), node([OTHER], { metadata: { resourceVersion: '2' } }), 'allow'],
    ['the only taint removed (no list left)', node([OOS]), node(undefined), 'allow'],
    ['the only taint removed (empty list)', node([OOS]), node([]), 'allow'],
    ['one of two out-of-service taints removed', node([OOS, OOS_NOSCHEDULE]), node([OOS_NOSCHEDULE]), 'allow'],
    ['another taint removed', node([OOS, OTHER]), node([OOS]), 'deny'],
    ['both removed', node([OOS, OTHER]), node([]), 'deny'],
    ['the taint removed and another added', node([OOS, OTHER]), node([OTHER, { key: 'x', effect: 'NoSchedule' }]), 'deny'],
    ["the taint's value changed", node([OOS, OTHER]), node([{ ...OOS, value: 'x' }, OTHER]), 'deny'],
    ['removed with a cordon', node([OOS]), node([], { spec: { unschedulable: true } }), 'deny'],
    ['removed with a label change', node([OOS]), node([], { metadata: { labels: { a: 'c' } } }), 'deny'],
    ['removed with an annotation added', node([OOS]), node([], { metadata: { annotations: { x: 'y' } } }), 'deny'],
    ['removed with another spec change', node([OOS]), node([], { spec: { providerID: 'aws://x' } }), 'deny'],
    ['no change at all', node([OOS]), node([OOS]), 'deny'],
  ] as const)('%s: %s', (_what, oldObject, object, want) => {
    expect(admit(p, { request: req(worker), oldObject, object })).toBe(want);
  });
  it("does not match the node agent's requests (they never patch Nodes: RBAC has no grant)", () => {
    expect(admit(p, { request: req(agent), oldObject: node([OOS]), object: node([]) })).toBe('not matched');
  });
});
