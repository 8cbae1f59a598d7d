import { describe, expect, it } from 'vitest';
import { OPERATOR_PERMISSIONS, OPERATOR_ROUTES, WEBHOOK_PATHS, permissionFor } from '../../../../src/control/auth/permissions.ts';

describe('the operator route table', () => {
  it('finds the permission of a concrete path, and nothing for a path it does not list', () => {
    expect(permissionFor('POST', '/v1/jobs/residual_abc/approve')).toEqual({ resource: 'jobs', verb: 'approve' });
    expect(permissionFor('GET', '/v1/jobs/residual_abc')).toEqual({ resource: 'jobs', verb: 'get' });
    expect(permissionFor('GET', '/v1/jobs/residual_abc/approval')).toEqual({ resource: 'jobs', verb: 'get' });
    expect(permissionFor('HEAD', '/v1/controls')).toEqual({ resource: 'controls', verb: 'get' });
    expect(permissionFor('POST', '/v1/resume')).toEqual({ resource: 'pauses', verb: 'delete' });
    expect(permissionFor('GET', '/v1/jobs/a/b/approve')).toBeUndefined();
    expect(permissionFor('DELETE', '/v1/jobs/x')).toBeUndefined();
    expect(permissionFor('GET', '/v1/modes')).toBeUndefined();
    for (const p of WEBHOOK_PATHS) expect(permissionFor('POST', p)).toBeUndefined();
  });

  it('names only documented verbs, and documents only verbs some route uses (or the dashboard)', () => {
    const used = new Set(OPERATOR_ROUTES.map((r) => `${r.permission.resource}/${r.permission.verb}`));
    const documented = Object.entries(OPERATOR_PERMISSIONS).flatMap(([res, verbs]) => Object.keys(verbs).map((v) => `${res}/${v}`));
    expect([...used].sort()).toEqual(documented.sort());
  });
});
