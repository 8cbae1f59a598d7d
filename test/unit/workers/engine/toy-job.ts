import type { LocalPvPlaceholderJob } from '../../../../src/core/catalogue/jobs.ts';

/** The job the engine's toy runbooks run: any valid job will do, the toy plans ignore it. */
export const toyJob: LocalPvPlaceholderJob = {
  version: 1,
  key: 'lpv_test_0123456789ab',
  runbook: 'local-pv-placeholder',
  action: 'place',
  target: { node: 'worker-1', pv: 'pv-1', path: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
  evidence: [{ source: 'api', summary: 'test', raw: {} }],
};
