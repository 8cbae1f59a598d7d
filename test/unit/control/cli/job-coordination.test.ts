import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../../../src/control/cli/api-client.ts';
import { job } from '../../../../src/control/cli/job-commands.ts';

// `volume-medic job <id>` on a job another tool holds (docs/coordination.md): the wait, whose it
// is and why, as the engine parked it (reason coordination, the why workers/engine/coordinate.ts
// writes), and the step it waits before.

const WHY = 'waiting for kured (holds the reboot lock for worker-1: weave.works/kured-node-lock on daemonset kube-system/kured)';
const parkedJob = {
  id: 'lpv_pv-1_0123456789ab',
  runbook: 'local-pv-placeholder',
  node: 'worker-1',
  queue: 'vm-node-{worker-1}',
  state: 'delayed',
  attemptsMade: 0,
  createdAt: '2026-12-07T14:00:00.000Z',
  progress: {
    parked: {
      reason: 'coordination',
      since: '2026-12-07T14:00:01.000Z',
      why: WHY,
      plan: { summary: 'attach a placeholder', steps: [{ id: 'attach-loop:pv-1', description: 'losetup --find --show ...', destructive: true }] },
    },
  },
};

describe('the CLI on a job waiting for another tool', () => {
  it('says it waits for coordination, for whom and why, and before which step', async () => {
    const api: ApiClient = {
      get: async (path) => {
        if (path.endsWith('/approval')) throw new Error('404');
        return parkedJob;
      },
      post: async () => ({}),
    };
    const lines: string[] = [];
    await job(api, parkedJob.id, { json: false }, (l) => lines.push(l));
    const text = lines.join('\n');
    expect(text).toMatch(new RegExp(`^waiting:\\s+coordination since 2026-12-07T14:00:01.000Z: ${WHY.replace(/[()./]/g, '\\$&')}$`, 'm'));
    expect(text).toMatch(/attach-loop:pv-1\s+planned\s+destructive/);
  });
});
