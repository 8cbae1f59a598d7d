// Parses `multipath -ll` (libmultipath print.c: snprint_multipath_topology) into maps, path
// groups and paths. Layouts seen in the wild:
//
//   mpatha (3600140512345678901234567890abcde) dm-0 LIO-ORG,disk1        user_friendly_names on
//   3600140512345678901234567890abcde dm-0 LIO-ORG,disk1                  ... off (name = wwid)
//   size=1.0G features='1 queue_if_no_path' hwhandler='1 alua' wp=rw
//   |-+- policy='service-time 0' prio=50 status=active
//   | `- 2:0:0:1 sda 8:0   active ready running                          %i %d %D %t %T %o
//   `-+- policy='service-time 0' prio=0 status=enabled
//     `- #:#:#:# -   #:#   failed faulty running                         path whose disk is gone
//
// and the old bracket layout (multipath-tools <= 0.4.9):
//   [size=20G][features=1 queue_if_no_path][hwhandler=0][rw]
//   \_ round-robin 0 [prio=8][active]
//    \_ 2:0:0:0 sdb 8:16  [active][ready]
//
// The checker state can be two words (`i/o pending`, `i/o timeout`). Lines we cannot place are
// kept per map in `problems`: the planner never acts on a map it did not fully understand.

export interface MultipathPath {
  /** host:channel:target:lun, null for `#:#:#:#` (no SCSI address known). */
  hctl: string | null;
  /** Kernel name (sdb), null for `-` (the disk is gone). */
  dev: string | null;
  /** major:minor, null for `#:#`. */
  devT: string | null;
  /** Device-mapper's view: active | failed | undef. */
  dmState: string;
  /** Path checker: ready | faulty | shaky | ghost | i/o pending | i/o timeout | delayed | undef ... */
  checkerState: string;
  /** SCSI device state: running | offline | blocked | transport-offline ...; null in the old layout. */
  onlineState: string | null;
}

interface MultipathGroup {
  policy: string | null;
  prio: number | null;
  status: string | null;
  paths: MultipathPath[];
}

export interface MultipathMap {
  /** Alias (mpatha) or, without user_friendly_names, the WWID itself. */
  name: string;
  wwid: string;
  /** dm-N, null when multipath did not print one. */
  dm: string | null;
  /** `vendor,product` of the first path, as printed. */
  vendorProduct: string | null;
  size: string | null;
  /** The features string as printed, e.g. `1 queue_if_no_path` or `0`. */
  features: string | null;
  queueIfNoPath: boolean;
  hwhandler: string | null;
  writeProtect: string | null;
  groups: MultipathGroup[];
  /** Lines inside this map's block that did not parse. */
  problems: string[];
}

export interface MultipathListing {
  maps: MultipathMap[];
  /** Lines outside any map that are not known noise (log lines). */
  stray: string[];
}

const HCTL = String.raw`(?:\d+|#):(?:\d+|#):(?:\d+|#):(?:\d+|#)`;
const HEADER = /^(?:[a-z]+: )?(\S+)(?: \(([^()\s]+)\))? +(dm-\d+)?(?: +(.*?))?\s*$/;
const NEW_PATH = new RegExp(`^(${HCTL})\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s+(.+?)\\s*$`);
const OLD_PATH = new RegExp(`^(${HCTL})\\s+(\\S+)\\s+(\\S+)\\s+\\[(\\w+)\\]\\[([^\\]]+)\\]`);
/** multipath's own log lines (`Jun 03 10:00:00 | sda: ...`, or `sda: ...` without timestamps). */
const LOG_LINE = /^(?:[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \| |\d+\.\d+ \| )/;
const TREE = /^[\s|`\\_+-]+/;

const unquote = (v: string | undefined): string | null => (v === undefined ? null : v.replace(/^'(.*)'$/, '$1'));
const orNull = (v: string | undefined, none: string): string | null => (v === undefined || v === none ? null : v);

function parseProps(text: string, map: MultipathMap): boolean {
  if (text.startsWith('size=')) {
    const props = new Map<string, string>();
    for (const m of text.matchAll(/(\w+)=('[^']*'|\S+)/g)) if (m[1] && m[2]) props.set(m[1], m[2]);
    map.size = props.get('size') ?? null;
    map.features = unquote(props.get('features'));
    map.hwhandler = unquote(props.get('hwhandler'));
    map.writeProtect = props.get('wp') ?? null;
  } else if (text.startsWith('[size=')) {
    const parts = [...text.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1] ?? '');
    for (const p of parts) {
      const [k, ...v] = p.split('=');
      if (k === 'size') map.size = v.join('=');
      else if (k === 'features') map.features = v.join('=');
      else if (k === 'hwhandler') map.hwhandler = v.join('=');
      else if (v.length === 0) map.writeProtect = k ?? null;
    }
  } else {
    return false;
  }
  map.queueIfNoPath = (map.features ?? '').split(/\s+/).includes('queue_if_no_path');
  return true;
}

function parsePath(text: string): MultipathPath | null {
  const old = OLD_PATH.exec(text);
  if (old) {
    return {
      hctl: orNull(old[1], '#:#:#:#'),
      dev: orNull(old[2], '-'),
      devT: orNull(old[3], '#:#'),
      dmState: old[4] ?? '',
      checkerState: old[5] ?? '',
      onlineState: null,
    };
  }
  const m = NEW_PATH.exec(text);
  if (!m) return null;
  const rest = (m[5] ?? '').split(/\s+/);
  // %T may be two words; %o is one word and always last.
  const onlineState = rest.length >= 2 ? (rest.pop() ?? null) : null;
  const checkerState = rest.join(' ');
  if (!checkerState) return null;
  return {
    hctl: orNull(m[1], '#:#:#:#'),
    dev: orNull(m[2], '-'),
    devT: orNull(m[3], '#:#'),
    dmState: m[4] ?? '',
    checkerState,
    onlineState,
  };
}

function parseGroup(text: string): MultipathGroup | null {
  if (text.startsWith('policy=')) {
    const m = /^policy='([^']*)' prio=(-?\d+|#) status=(\S+)/.exec(text);
    if (!m) return null;
    return { policy: m[1] ?? null, prio: m[2] === '#' ? null : Number(m[2]), status: m[3] ?? null, paths: [] };
  }
  const old = /^(.*?)\s*\[prio=(-?\d+)\]\[(\w+)\]\s*$/.exec(text);
  if (old) return { policy: old[1] || null, prio: Number(old[2]), status: old[3] ?? null, paths: [] };
  return null;
}

export function parseMultipathLl(stdout: string): MultipathListing {
  const listing: MultipathListing = { maps: [], stray: [] };
  let map: MultipathMap | null = null;
  for (const raw of stdout.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || LOG_LINE.test(line)) continue;
    const indented = TREE.test(line);
    const text = line.replace(TREE, '');
    if (!indented && !text.startsWith('size=') && !text.startsWith('[size=')) {
      const h = HEADER.exec(line);
      if (h?.[1] && (h[3] || h[2])) {
        map = {
          name: h[1],
          wwid: h[2] ?? h[1],
          dm: h[3] ?? null,
          vendorProduct: h[4]?.trim() || null,
          size: null,
          features: null,
          queueIfNoPath: false,
          hwhandler: null,
          writeProtect: null,
          groups: [],
          problems: [],
        };
        listing.maps.push(map);
        continue;
      }
    }
    if (!map) {
      listing.stray.push(line);
      continue;
    }
    if (parseProps(text, map)) continue;
    const path = parsePath(text);
    if (path) {
      let group = map.groups.at(-1);
      if (!group) {
        group = { policy: null, prio: null, status: null, paths: [] };
        map.groups.push(group);
      }
      group.paths.push(path);
      continue;
    }
    const group = parseGroup(text);
    if (group) {
      map.groups.push(group);
      continue;
    }
    map.problems.push(line);
  }
  for (const m of listing.maps) if (m.features === null) m.problems.push('no size/features line');
  return listing;
}

/** Every path of a map, across its path groups. */
export const pathsOf = (map: MultipathMap): MultipathPath[] => map.groups.flatMap((g) => g.paths);

/** A path multipath itself considers dead: failed in the kernel and faulty to the checker. */
export const isDeadPath = (p: MultipathPath): boolean => p.dmState === 'failed' && p.checkerState === 'faulty';
