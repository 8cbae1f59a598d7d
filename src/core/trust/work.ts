import type { RemediationJob } from '../catalogue/jobs.ts';
import type { Keyring } from './keyring.ts';
import type { Role } from './roles.ts';
import { sealedBytes } from './encoding.ts';
import { Seal, verifySeal, type Sealer, type Verdict } from './seal.ts';
import { otherGeneration } from './key-generations.ts';
import { outOfScope, workRingFor } from './work-keys.ts';

// Sealed work: a job's data on its queue is the catalogue job plus `seal`, bound to the queue
// and the job id, made with the issuer's work key of that queue (src/core/trust/work-keys.ts). Agents
// verify it before anything else.

export const SEAL_FIELD = 'seal';

// A job read back from Redis is checked against its seal before the catalogue parses it: its key
// may be anything (a forged object has no usable toString), and the subject must still be text.
const subjectOf = (queue: string, jobId: unknown): string => `${queue}/${typeof jobId === 'string' ? jobId : (JSON.stringify(jobId) ?? '')}`;

function workSealer(sealer: Sealer, queue: string): Sealer {
  if (!sealer.workFor) throw new Error(`a ${sealer.role} control key does not seal work`);
  return sealer.workFor(queue);
}

/** The data stored for `job` on `queue` (job id = its key). */
export function sealJob(sealer: Sealer, queue: string, job: RemediationJob, ttlMs: number): RemediationJob & { seal: ReturnType<Sealer['seal']> } {
  return { ...job, seal: workSealer(sealer, queue).seal('job', subjectOf(queue, job.key), job, ttlMs) };
}

/**
 * sealJob's result as the JSON text BullMQ stores (JSON.stringify of it, byte for byte), with
 * the job encoded once: the seal covers sealedBytes(job) (JSON.stringify), and the stored text is
 * that same text with the seal appended as its last member, which is what JSON.stringify of
 * `{ ...job, seal }` writes (the spread keeps the job's members in order and `seal` comes last:
 * a job has no member of that name). The receiver's hot path used to encode every job twice, for
 * the MAC and again inside BullMQ (its cost: bench/README.md, "Figures behind the code").
 */
export function sealedJobText(sealer: Sealer, queue: string, job: RemediationJob, ttlMs: number): string {
  const encoded = sealedBytes(job);
  const seal = workSealer(sealer, queue).sealEncoded('job', subjectOf(queue, job.key), encoded, ttlMs);
  return `${encoded.slice(0, -1)}${encoded.length > 2 ? ',' : ''}"${SEAL_FIELD}":${JSON.stringify(seal)}}`;
}

/** Verifies the seal of data read from `queue` under `jobId` (untrusted: straight from Redis). */
export function verifyJobSeal(ring: Keyring, queue: string, jobId: string, data: unknown, now: number): Verdict {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return { ok: false, reason: 'malformed', detail: 'job data is not an object' };
  const { [SEAL_FIELD]: seal, ...body } = data as Record<string, unknown>;
  const v = verifySeal(workRingFor(ring, queue), 'job', subjectOf(queue, jobId), body, seal, now);
  if (v.ok || v.reason !== 'unknown-key') return v;
  const parsed = Seal.safeParse(seal);
  const why =
    outOfScope(ring, queue) ?? (parsed.success ? otherGeneration(workRingFor(ring, queue).verify.keys(), `${parsed.data.iss}.${parsed.data.kid}`) : undefined);
  return why ? { ok: false, reason: 'unknown-key', detail: why } : v;
}

/**
 * Whether stored job data was sealed by an issuer this keyring knows, for this queue and job id,
 * whatever its age: the check before an operator's retry seals the same work afresh
 * (src/control/actions/job-retry.ts). An expired seal passes (that is often why the job failed); a
 * missing, forged, altered or moved one does not, so a retry never turns data someone wrote
 * into Redis into sealed work.
 */
export function verifyJobProvenance(ring: Keyring, queue: string, jobId: string, data: unknown): Verdict {
  const raw = data !== null && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, unknown>)[SEAL_FIELD] : undefined;
  const parsed = Seal.safeParse(raw);
  // Checked at the seal's own issue time: the MAC, the key and the window's shape, not the clock.
  return verifyJobSeal(ring, queue, jobId, data, parsed.success ? parsed.data.iat : 0);
}

/**
 * Who may issue which work. The receiver: what triage and the operator API ask for. The cluster
 * worker: only the node half of an RBD release (`rbd-unmap`), which nothing else may ask for.
 * A node agent: only what its own checks find on its own node (a detector's placeholder release,
 * finishing an interrupted multipath cleanup, an orphaned pod directory, a stopped PV file
 * system); the agent also checks the node is its own.
 * Returns why not, or undefined when allowed.
 */
export function issuerMayNot(role: Role, job: RemediationJob): string | undefined {
  switch (role) {
    case 'receiver':
      return job.runbook === 'rbd-unmap' ? 'rbd-unmap is issued by the cluster worker only, not the receiver' : undefined;
    case 'cluster-worker':
      return job.runbook === 'rbd-unmap' ? undefined : `${job.runbook} is not issued by the cluster worker`;
    case 'node-agent':
      // Its scans of its own host: residue of an interrupted cleanup, kubelet's orphaned pod
      // directories, a PV file system the kernel stopped (the pod delete that follows is high
      // risk: approval by default, and the chart's admission policy limits it to this node's pods).
      if (job.runbook === 'residual-multipath-cleanup' || job.runbook === 'orphaned-pod-volumes' || job.runbook === 'readonly-filesystem-recovery')
        return undefined;
      if (job.runbook === 'local-pv-placeholder' && job.action === 'release' && (job.release?.by ?? 'detector') === 'detector') return undefined;
      return `a node agent issues only its own checks' work (multipath cleanup, orphaned pod directories, a stopped file system, a detector's placeholder release), not ${job.runbook}${job.runbook === 'local-pv-placeholder' ? ` ${job.action}${job.release ? ` by ${job.release.by}` : ''}` : ''}`;
    default: {
      const never: never = role;
      return never;
    }
  }
}
