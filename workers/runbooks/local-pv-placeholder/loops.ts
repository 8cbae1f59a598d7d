import { z } from '../../../src/core/zod.ts';
import type { Host } from '../../host/host.ts';
import { expectOk } from '../../host/command-failed.ts';

// Which loop devices are attached, and to what, from `losetup --list --json` (the kernel's view,
// wherever the command runs). Back-file paths are as commands see them (Host.argPath).

export interface LoopAttachment {
  loop: string;
  backFile: string | null;
}

const LosetupList = z.lazy(() =>
  z.object({
    loopdevices: z.array(z.object({ name: z.string(), 'back-file': z.nullable(z.string()) })),
  }),
);

const LIST_LOOPS = ['losetup', '--list', '--json', '--output', 'NAME,BACK-FILE'] as const;

export function parseLosetupList(stdout: string): LoopAttachment[] {
  // Older util-linux prints nothing at all when no loop device is attached.
  if (stdout.trim() === '') return [];
  const parsed = LosetupList.parse(JSON.parse(stdout));
  return parsed.loopdevices.map((d) => ({
    loop: d.name.replace(/^\/dev\//, ''),
    // A deleted backing file shows as "<path> (deleted)"; it is still the same file.
    backFile: d['back-file']?.replace(/ \(deleted\)$/, '') ?? null,
  }));
}

export async function listLoops(host: Host): Promise<LoopAttachment[]> {
  return parseLosetupList(expectOk(await host.run(LIST_LOOPS)).stdout);
}
