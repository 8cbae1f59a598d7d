import { z } from '../../../src/core/zod.ts';
import { DEVICE_PATTERNS } from '../../../src/core/catalogue/names.ts';

// `rbd showmapped` (= `rbd device list`): which images the kernel has mapped on this node.
// JSON: an array of {id, pool, namespace, name, snap, device} (strings; `snap` is `-` for the
// image head). Text: a table whose `namespace` column is usually empty, so it is cut by the
// header's column positions, not by whitespace.

export interface Mapping {
  id: string;
  pool: string;
  namespace: string;
  image: string;
  snap: string;
  /** Kernel name, `rbd0`. */
  device: string;
}

const Row = z.object({
  id: z.union([z.string(), z.number()]),
  pool: z.string(),
  namespace: z.optional(z.string()),
  name: z.string(),
  snap: z.string(),
  device: z.string(),
});

function mapping(id: string, pool: string, namespace: string, image: string, snap: string, device: string): Mapping {
  const name = device.replace(/^\/dev\//, '');
  if (!DEVICE_PATTERNS.rbd.test(name)) throw new Error(`rbd showmapped: ${JSON.stringify(device)} is not an rbd device`);
  return { id, pool, namespace, image, snap, device: name };
}

export function parseShowmappedJson(stdout: string): Mapping[] {
  if (stdout.trim() === '') return [];
  return z
    .array(Row)
    .parse(JSON.parse(stdout))
    .map((r) => mapping(String(r.id), r.pool, r.namespace ?? '', r.name, r.snap, r.device));
}

export function parseShowmappedText(stdout: string): Mapping[] {
  const lines = stdout.split('\n').filter((l) => l.trim() !== '');
  const header = lines.shift();
  if (!header) return [];
  const names = ['id', 'pool', 'namespace', 'image', 'snap', 'device'];
  const starts = names.map((n) => new RegExp(`(^|\\s)${n}(\\s|$)`).exec(header)).map((m) => (m ? m.index + (m[1] ? 1 : 0) : -1));
  if (starts.some((s) => s < 0)) throw new Error(`rbd showmapped: unexpected header ${JSON.stringify(header)}`);
  return lines.map((line) => {
    const cols = starts.map((s, i) => line.slice(s, starts[i + 1] ?? undefined).trim());
    return mapping(cols[0]!, cols[1]!, cols[2]!, cols[3]!, cols[4]!, cols[5]!);
  });
}

export const SHOWMAPPED = ['rbd', 'showmapped', '--format', 'json'] as const;
