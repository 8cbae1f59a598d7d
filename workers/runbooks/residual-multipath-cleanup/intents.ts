import { posix } from 'node:path';
import { isMapName } from '../../../src/core/catalogue/names.ts';
import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import { writeJsonFile } from '../../host/json-file.ts';

// The intent of a destructive sequence, on the host, before its first destructive step (issue
// 19, "resumable destructive sequences"): which map, which WWID, which SCSI disks by H:C:T:L and
// WWID. Each step adds itself when done. If the agent dies between `multipath -f` and the disk
// deletes, the map is gone and observe would never see its disks again; the record lets the next
// job on the node find those orphans by identity and finish the work, after re-checking that no
// new map or user claims them. Removed once the map and every disk are gone.

export const IntentRecord = z.lazy(() =>
  z.object({
    version: z.literal(1),
    jobId: z.string(),
    /** A record on disk is input: a map name outside the pattern makes it unreadable (never acted on). */
    map: z.string().check(z.refine(isMapName, 'not a plain map name')),
    wwid: z.string().check(z.regex(/^[0-9A-Za-z._:-]{1,128}$/)),
    dm: z.string(),
    disks: z.array(z.object({ name: z.string(), hctl: z.nullable(z.string()), wwid: z.string() })).check(z.maxLength(64)),
    createdAt: z.string(),
    bootId: z.nullable(z.string()),
    done: z.array(z.object({ step: z.string(), at: z.string() })).check(z.maxLength(256)),
  }),
);
export type IntentRecord = z.infer<typeof IntentRecord>;

export const intentsDir = (stateDir: string): string => posix.join(stateDir, 'intents', 'residual-multipath');
export const intentPath = (stateDir: string, wwid: string): string => posix.join(intentsDir(stateDir), `${wwid}.json`);

export interface IntentListing {
  records: IntentRecord[];
  /** Files that exist but do not parse: reported, never acted on. */
  unreadable: string[];
}

export async function readIntents(host: Host, stateDir: string): Promise<IntentListing> {
  const out: IntentListing = { records: [], unreadable: [] };
  for (const name of await host.list(intentsDir(stateDir))) {
    if (!name.endsWith('.json')) continue;
    const path = posix.join(intentsDir(stateDir), name);
    const text = await host.readFile(path).catch(() => null);
    let parsed: IntentRecord | null = null;
    try {
      const r = IntentRecord.safeParse(JSON.parse(text ?? ''));
      parsed = r.success && `${r.data.wwid}.json` === name ? r.data : null;
    } catch {
      parsed = null;
    }
    if (parsed) out.records.push(parsed);
    else out.unreadable.push(path);
  }
  out.records.sort((a, b) => a.wwid.localeCompare(b.wwid));
  return out;
}

export async function writeIntent(host: Host, stateDir: string, record: IntentRecord): Promise<void> {
  await writeJsonFile(host, intentPath(stateDir, IntentRecord.parse(record).wwid), record, 2);
}

/** Adds a done step to the record of `wwid`, if there is one (a step of a sequence without a record changes nothing here). */
export async function markIntentStep(host: Host, stateDir: string, wwid: string, step: string, at: string): Promise<void> {
  const text = await host.readFile(intentPath(stateDir, wwid)).catch(() => null);
  if (text === null) return;
  const r = IntentRecord.safeParse(JSON.parse(text));
  if (!r.success || r.data.done.some((d) => d.step === step)) return;
  await writeIntent(host, stateDir, { ...r.data, done: [...r.data.done, { step, at }] });
}
