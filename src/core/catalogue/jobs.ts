import { z } from '../zod.ts';
import { BootId, CephClientAddress, CephName, DiskLinkPath, KernelDeviceName, Namespace, NodeName, ObjectName, PodUid } from './names.ts';
import { JOB_ID } from './idempotency-keys.ts';
import { Evidence } from './evidence.ts';

// The job catalogue: the one contract src/ (which enqueues) and workers/ (which runs) share.
// Jobs are a discriminated union on `runbook`, versioned, and parsed with these schemas on both
// sides of Redis: whatever comes out of a queue is untrusted until it parses.

export const RUNBOOKS = [
  'residual-multipath-cleanup',
  'local-pv-placeholder',
  'rbd-stale-mapping',
  'rbd-unmap',
  'orphaned-pod-volumes',
  'readonly-filesystem-recovery',
  'out-of-service-taint-release',
] as const;
export const RunbookName = z.enum(RUNBOOKS);
export type RunbookName = z.infer<typeof RunbookName>;

// Built with each job schema, on its first use (z.lazy): an agent holds them only once it runs a job.
const base = () => ({
  version: z.literal(1),
  key: z.string().check(z.regex(JOB_ID, 'not a valid idempotency key')),
  evidence: z.array(Evidence).check(z.minLength(1), z.maxLength(20)),
  /**
   * Set on an operator's retry of a failed job (src/control/actions/job-retry.ts): a new job, sealed
   * afresh, whose key is `<of>.r<n>`. `of` is the first job's key: the host journal is kept under
   * it (workers/engine/run-runbook.ts), so a step that took effect in any earlier job of the line
   * is not repeated.
   */
  retry: z.optional(z.object({ of: z.string().check(z.regex(JOB_ID)), n: z.number().check(z.int(), z.gte(1), z.lte(99)) })),
  /**
   * Set, under the seal, by a receiver that counts the job's node towards the storm breaker when it
   * stores the job (src/adapters/jobstore/store-pipeline.ts): the agent then counts nothing at the
   * start (an enrolled agent's ask to the receiver saved). Without it the agent counts the start.
   */
  stormCounted: z.optional(z.literal(true)),
});

export const ResidualMultipathJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('residual-multipath-cleanup'),
    target: z.object({ node: NodeName }),
    /** The boot the node came back with, when the trigger told us (kubelet Rebooted event, Node watch). */
    bootId: z.optional(BootId),
  }),
);

export const LocalPvPlaceholderJob = z.lazy(() =>
  z
    .object({
      ...base(),
      runbook: z.literal('local-pv-placeholder'),
      target: z.object({ node: NodeName, pv: ObjectName, path: DiskLinkPath }),
      /** `place` bridges a missing disk with a 512-byte loop device; `release` removes our placeholder. */
      action: z.enum(['place', 'release']),
      /**
       * Who asks for a release. `detector` (NPD's condition cleared, an Event, the agent's own check):
       * the agent verifies the real disk is back before it detaches anything; a release job without
       * this field is treated as one. `operator` (POST /v1/placeholders/release): must carry `force`,
       * and detaches without the disk check, recorded as such in the evidence and the audit trail.
       */
      release: z.optional(
        z
          .object({ by: z.enum(['detector', 'operator']), force: z.boolean() })
          .check(z.refine((r) => (r.by === 'operator') === r.force, 'an operator release must carry force: true, and only an operator release may')),
      ),
    })
    .check(z.refine((j) => j.release === undefined || j.action === 'release', 'release applies to action release only')),
);

export const RbdStaleMappingJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('rbd-stale-mapping'),
    target: z.object({
      pool: CephName,
      image: CephName,
      /** The pod that cannot mount the image; its node is never the one we release the image on. */
      pod: z.optional(z.object({ namespace: Namespace, name: ObjectName })),
      node: z.optional(NodeName),
    }),
  }),
);

/**
 * The node half of `rbd-stale-mapping`: release the mapping that holds `watcher` on `node`.
 * Enqueued by the cluster worker (never by triage) after it mapped the watcher's address to a
 * Ready node; its key derives from the cluster job's key and the watcher (same lineage).
 */
export const RbdUnmapJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('rbd-unmap'),
    target: z.object({ node: NodeName, pool: CephName, image: CephName, watcher: CephClientAddress }),
    /** The PVC bound to the image, when the cluster half knew it: the node re-checks that no pod here still uses it. */
    claim: z.optional(z.object({ namespace: Namespace, name: ObjectName })),
    /** Key of the rbd-stale-mapping job that asked for this one. */
    parent: z.optional(z.string().check(z.regex(JOB_ID))),
  }),
);

/**
 * Remove what kubelet left of pods that no longer exist (`<kubelet root>/pods/<uid>/`): only
 * directories and kubelet's own metadata, never data (docs/decisions/0008 §2). Without `podUid`
 * the job covers every orphan the agent's scan finds.
 */
export const OrphanedPodVolumesJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('orphaned-pod-volumes'),
    target: z.object({ node: NodeName, podUid: z.optional(PodUid) }),
    bootId: z.optional(BootId),
  }),
);

/**
 * A PV file system the kernel stopped (ext4 remounted read-only after an error, XFS shut down):
 * once its device is healthy again, delete the pods using it so kubelet unstages, checks and
 * mounts it again (docs/decisions/0008 §3). Without `device` the agent's mountinfo scan finds it.
 */
export const ReadonlyFilesystemRecoveryJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('readonly-filesystem-recovery'),
    target: z.object({ node: NodeName, device: z.optional(KernelDeviceName) }),
    bootId: z.optional(BootId),
  }),
);

/**
 * Remove the `node.kubernetes.io/out-of-service` taint of a node that came back, only on storage
 * evidence (docs/decisions/0008 §4). `bootIdAtFirstSight` is the boot the Node reported when the
 * receiver first saw the taint: the node must have booted since.
 */
export const OutOfServiceTaintReleaseJob = z.lazy(() =>
  z.object({
    ...base(),
    runbook: z.literal('out-of-service-taint-release'),
    target: z.object({ node: NodeName }),
    taint: z.object({
      /** RFC 3339, as spec.taints[].timeAdded; absent when the API server did not set it. */
      timeAdded: z.optional(z.iso.datetime({ offset: true })),
      bootIdAtFirstSight: z.optional(BootId),
      firstSeenAt: z.iso.datetime({ offset: true }),
    }),
  }),
);

export const RemediationJob = z.discriminatedUnion('runbook', [
  ResidualMultipathJob,
  LocalPvPlaceholderJob,
  RbdStaleMappingJob,
  RbdUnmapJob,
  OrphanedPodVolumesJob,
  ReadonlyFilesystemRecoveryJob,
  OutOfServiceTaintReleaseJob,
]);
export type RemediationJob = z.infer<typeof RemediationJob>;
export type ResidualMultipathJob = z.infer<typeof ResidualMultipathJob>;
export type LocalPvPlaceholderJob = z.infer<typeof LocalPvPlaceholderJob>;
export type RbdStaleMappingJob = z.infer<typeof RbdStaleMappingJob>;
export type RbdUnmapJob = z.infer<typeof RbdUnmapJob>;
export type OrphanedPodVolumesJob = z.infer<typeof OrphanedPodVolumesJob>;
export type ReadonlyFilesystemRecoveryJob = z.infer<typeof ReadonlyFilesystemRecoveryJob>;
export type OutOfServiceTaintReleaseJob = z.infer<typeof OutOfServiceTaintReleaseJob>;
export type JobOf<R extends RunbookName> = Extract<RemediationJob, { runbook: R }>;

/** The node a job concerns, if any (for listing and filtering; not necessarily where it runs). */
export function jobNode(job: RemediationJob): string | undefined {
  switch (job.runbook) {
    case 'residual-multipath-cleanup':
    case 'local-pv-placeholder':
      return job.target.node;
    case 'rbd-stale-mapping':
      return job.target.node;
    case 'rbd-unmap':
    case 'orphaned-pod-volumes':
    case 'readonly-filesystem-recovery':
    case 'out-of-service-taint-release':
      return job.target.node;
    default: {
      const never: never = job;
      return never;
    }
  }
}
