import { posix } from 'node:path';
import { isObjectName } from '../../../src/core/catalogue/names.ts';
import type { Host } from '../../host/host.ts';
import { writeJsonFile } from '../../host/json-file.ts';
import { InvalidNameError } from '../../host/paths.ts';
import { PlaceholderRecord } from './record.ts';

// Placeholder records and images live in `<stateDir>/placeholders/` on the host, one
// `<pv>.json` and one `<pv>.img` per PV (PV names are RFC 1123 subdomains: safe file names).
// Writes go through the Host so a dry-run host records them instead of doing them.

export interface RecordListing {
  records: PlaceholderRecord[];
  /** File names that exist but do not parse: never trusted, never overwritten blindly. */
  unreadable: string[];
}

export class PlaceholderStore {
  readonly dir: string;
  readonly stateDir: string;

  constructor(stateDir: string) {
    this.stateDir = stateDir;
    this.dir = posix.join(stateDir, 'placeholders');
  }

  #file(pv: string, ext: 'json' | 'img'): string {
    if (!isObjectName(pv)) throw new InvalidNameError(`not a valid PV name: ${JSON.stringify(pv)}`);
    return posix.join(this.dir, `${pv}.${ext}`);
  }

  recordPath(pv: string): string {
    return this.#file(pv, 'json');
  }

  imagePath(pv: string): string {
    return this.#file(pv, 'img');
  }

  async list(host: Host): Promise<RecordListing> {
    const listing: RecordListing = { records: [], unreadable: [] };
    for (const name of await host.list(this.dir)) {
      if (!name.endsWith('.json')) continue;
      const record = parse(await host.readFile(posix.join(this.dir, name)));
      if (record) listing.records.push(record);
      else listing.unreadable.push(name);
    }
    return listing;
  }

  /** The record, null when none exists, 'unreadable' when a file exists but does not parse. */
  async get(host: Host, pv: string): Promise<PlaceholderRecord | null | 'unreadable'> {
    const text = await host.readFile(this.recordPath(pv));
    if (text === null) return null;
    return parse(text) ?? 'unreadable';
  }

  async put(host: Host, record: PlaceholderRecord): Promise<void> {
    await writeJsonFile(host, this.recordPath(record.pv), record, 2);
  }

  async remove(host: Host, pv: string): Promise<void> {
    await host.unlink(this.recordPath(pv));
  }
}

function parse(text: string | null): PlaceholderRecord | null {
  if (text === null) return null;
  try {
    const r = PlaceholderRecord.safeParse(JSON.parse(text));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}
