import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RemediationJob } from '../../../../src/core/catalogue/jobs.ts';
import {
  isCephClientAddress,
  isCephName,
  isDiskLinkPath,
  isKernelDeviceName,
  isNamespace,
  isNodeName,
  isObjectName,
  isPodUid,
} from '../../../../src/core/catalogue/names.ts';
import { queueFor } from '../../../../src/core/catalogue/queues.ts';
import { triage } from '../../../../src/control/triage/index.ts';
import { fixtureLookups, fixtureSignals, type FixtureSource } from '../../../support/fixtures.ts';

// Whatever a payload says, a job only ever names things that pass the strict name checks: every
// fixture, trigger or near-miss or hostile, goes through the whole path and each job is checked.

const SOURCES: FixtureSource[] = ['alertmanager', 'events', 'npd'];
const ALL = SOURCES.flatMap((source) =>
  readdirSync(new URL(`../../../fixtures/${source}/`, import.meta.url))
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ source, fixture: f.replace(/\.json$/, '') })),
);

/** Where a job's names will end up: queue names, argv, paths on the node. */
function targetNamesValid(job: RemediationJob): boolean {
  switch (job.runbook) {
    case 'residual-multipath-cleanup':
      return isNodeName(job.target.node);
    case 'local-pv-placeholder':
      return isNodeName(job.target.node) && isObjectName(job.target.pv) && isDiskLinkPath(job.target.path);
    case 'rbd-stale-mapping':
      return (
        isCephName(job.target.pool) &&
        isCephName(job.target.image) &&
        (job.target.node === undefined || isNodeName(job.target.node)) &&
        (job.target.pod === undefined || (isNamespace(job.target.pod.namespace) && isObjectName(job.target.pod.name)))
      );
    case 'rbd-unmap':
      return isNodeName(job.target.node) && isCephName(job.target.pool) && isCephName(job.target.image) && isCephClientAddress(job.target.watcher);
    case 'orphaned-pod-volumes':
      return isNodeName(job.target.node) && (job.target.podUid === undefined || isPodUid(job.target.podUid));
    case 'readonly-filesystem-recovery':
      return isNodeName(job.target.node) && (job.target.device === undefined || isKernelDeviceName(job.target.device));
    case 'out-of-service-taint-release':
      return isNodeName(job.target.node);
    default: {
      const never: never = job;
      return never;
    }
  }
}

describe('names in jobs', () => {
  it('has fixtures to check', () => {
    expect(ALL.length).toBeGreaterThan(30);
  });

  it.each(ALL)('makes only jobs with valid names out of $source/$fixture', async ({ source, fixture }) => {
    const { signals } = fixtureSignals(source, fixture);
    const { jobs } = await triage(signals, { lookups: fixtureLookups() });
    for (const job of jobs) {
      expect(RemediationJob.safeParse(job).success).toBe(true);
      expect(targetNamesValid(job)).toBe(true);
      expect(queueFor(job)).toMatch(/^vm-(cluster-\{cluster\}|node-\{[a-z0-9.-]+\})$/);
      expect(JSON.stringify(job.target)).not.toMatch(/[;\s]|\.\.|rm -rf/);
    }
  });
});
