import { posix } from 'node:path';
import type { Host } from './host.ts';

// A JSON file the agent keeps on the host (state records, observations): written whole to a
// temporary name and renamed over the old one, so a crash leaves the old file or the new one,
// never half of either. Through the Host, so a dry-run host only records the three changes.

/** `indent`: JSON.stringify's, for files an operator reads by hand. */
export async function writeJsonFile(host: Host, path: string, value: unknown, indent?: number): Promise<void> {
  await host.mkdir(posix.dirname(path));
  await host.writeFile(`${path}.tmp`, `${JSON.stringify(value, null, indent)}\n`);
  await host.rename(`${path}.tmp`, path);
}
