import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// What took effect on the real agents' hosts: each line of a host's effects log is one step's
// effect (`<jobId> <step>`); a pair seen twice is a destructive step run twice.

export function effectCounts(hostRoots: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const root of hostRoots) {
    let text = '';
    try {
      text = readFileSync(join(root, 'var/log/effects.log'), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) if (line) counts.set(line, (counts.get(line) ?? 0) + 1);
  }
  return counts;
}
