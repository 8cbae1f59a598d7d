// Look-only argv shapes of dm-multipath tools, for the dry-run host (read-only-commands.ts):
// listing maps and paths, device-mapper's info/table/status, and the residual-map read probe
// (one direct 1 MiB read into /dev/null). Everything else (`multipath -f`, `dmsetup message`,
// `dmsetup remove`, `multipathd del ...`) changes the node and is only recorded.

const DMSETUP_LOOKS = new Set(['info', 'table', 'status', 'ls', 'deps']);
const DMSETUP_FLAGS = new Set(['-c', '-C', '--columns', '--noheadings', '--showkeys', '--tree']);
const DMSETUP_VALUE_FLAGS = new Set(['-o', '--options', '--separator', '--target', '--sort']);
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}$/;
const PROBE_INPUT = /^if=(\/[^\0]*)?\/dev\/(dm-[0-9]{1,6}|mapper\/[A-Za-z0-9._:+-]{1,128})$/;

function multipathListsOnly(args: readonly string[]): boolean {
  let listing = false;
  let names = 0;
  for (const a of args) {
    if (a === '-l' || a === '-ll') listing = true;
    else if (/^-v[0-4]$/.test(a)) continue;
    else if (NAME.test(a)) names++;
    else return false;
  }
  return listing && names <= 1;
}

function dmsetupLooksOnly(args: readonly string[]): boolean {
  const [verb, ...rest] = args;
  if (!verb || !DMSETUP_LOOKS.has(verb)) return false;
  let names = 0;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i] ?? '';
    if (DMSETUP_FLAGS.has(a)) continue;
    if (DMSETUP_VALUE_FLAGS.has(a)) {
      i++;
      continue;
    }
    if (!NAME.test(a)) return false;
    names++;
  }
  return names <= 1;
}

export function isMultipathLookOnly(argv: readonly string[]): boolean {
  const [file, ...args] = argv;
  switch (file) {
    case 'multipath':
      return multipathListsOnly(args);
    case 'multipathd':
      return args[0] === 'show' && args.length >= 2 && args.every((a) => !a.startsWith('-'));
    case 'dmsetup':
      return dmsetupLooksOnly(args);
    case 'dd':
      return (
        args.length === 5 &&
        PROBE_INPUT.test(args[0] ?? '') &&
        args[1] === 'of=/dev/null' &&
        args[2] === 'count=1' &&
        args[3] === 'bs=1M' &&
        args[4] === 'iflag=direct'
      );
    default:
      return false;
  }
}
