import { createHash } from 'node:crypto';

// The VolumeRemediation record of a job is named after the job: its id made DNS-safe (lower case,
// `-` for anything else) and a short hash of the queue and the exact id, so two ids that differ
// in case or in `.`/`_` (JOB_ID allows both) never share a record, nor do two queues' jobs with
// the same id. Readable enough to find by eye; unique by construction (<= 4 + 180 + 11 characters,
// a DNS subdomain as metadata.name requires).

/** The VolumeRemediation's name for job `id` on `queue`. */
export function recordName(queue: string, id: string): string {
  const readable = id
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .slice(0, 180)
    .replace(/^-+|-+$/g, '');
  const hash = createHash('sha256').update(`${queue}\t${id}`).digest('hex').slice(0, 10);
  return `vmr-${readable ? `${readable}-` : ''}${hash}`;
}
