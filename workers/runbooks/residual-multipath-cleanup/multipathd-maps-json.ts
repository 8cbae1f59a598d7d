import { z } from '../../../src/core/zod.ts';

// Parses `multipathd show maps json` (libmultipath print.h, PRINT_JSON_MAP / _GROUP / _PATH,
// major_version 0). Only the fields the runbook reads are required; the rest may come and go
// between versions. multipathd prints no escaping for odd characters, so a reply that is not
// JSON is reported as null and the runbook falls back to `multipath -ll` alone.

const JsonPath = z.object({
  dev: z.string(),
  dev_t: z.optional(z.string()),
  dm_st: z.string(),
  dev_st: z.optional(z.string()),
  chk_st: z.string(),
});
const JsonGroup = z.object({ paths: z.array(JsonPath) });
const JsonMap = z.object({
  name: z.string(),
  uuid: z.string(),
  sysfs: z.optional(z.string()),
  features: z.optional(z.string()),
  queueing: z.optional(z.string()),
  path_groups: z._default(z.array(JsonGroup), []),
});
const JsonMaps = z.object({ major_version: z.number(), minor_version: z.optional(z.number()), maps: z.array(JsonMap) });

export interface JsonMapView {
  name: string;
  wwid: string;
  dm: string | null;
  features: string | null;
  paths: Array<{ dev: string | null; dmState: string; checkerState: string; onlineState: string | null }>;
}

export function parseMultipathdMapsJson(stdout: string): JsonMapView[] | null {
  let data: unknown;
  try {
    data = JSON.parse(stdout);
  } catch {
    return null;
  }
  const parsed = JsonMaps.safeParse(data);
  if (!parsed.success || parsed.data.major_version !== 0) return null;
  return parsed.data.maps.map((m) => ({
    name: m.name,
    wwid: m.uuid,
    dm: m.sysfs && /^dm-\d+$/.test(m.sysfs) ? m.sysfs : null,
    features: m.features ?? null,
    paths: m.path_groups.flatMap((g) =>
      g.paths.map((p) => ({
        dev: p.dev === '-' || p.dev === '' ? null : p.dev,
        dmState: p.dm_st,
        checkerState: p.chk_st,
        onlineState: p.dev_st ?? null,
      })),
    ),
  }));
}
