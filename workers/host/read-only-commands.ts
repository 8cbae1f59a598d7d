import { isMultipathLookOnly } from './read-only-multipath.ts';

// The commands a dry-run host may really run: those that only look. An allowlist of argv shapes,
// not of program names alone (`losetup -l` looks, `losetup -d` detaches). Anything not listed
// is recorded as "would run" and not executed.

const LOSETUP_LOOK_FLAGS = new Set(['-l', '--list', '-J', '--json', '-a', '--all', '-n', '--noheadings', '--raw']);
const LOSETUP_VALUE_FLAGS = new Set(['-O', '--output']);
const BLOCKDEV_GETTERS = new Set(['--getsize64', '--getsz', '--getss', '--getro', '--getbsz']);
const ALWAYS_READ_ONLY = new Set(['cat', 'stat', 'readlink', 'test', 'lsblk', 'true', 'uname']);

function losetupLooksOnly(args: readonly string[]): boolean {
  let listing = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (LOSETUP_VALUE_FLAGS.has(a)) {
      i++;
      continue;
    }
    if (LOSETUP_LOOK_FLAGS.has(a)) {
      listing ||= a !== '-J' && a !== '--json' && a !== '-n' && a !== '--noheadings' && a !== '--raw';
      continue;
    }
    // A bare device is only a query when a listing flag says so (`losetup /dev/loop1 file` attaches).
    if (a.startsWith('/') && !a.includes('\0')) continue;
    return false;
  }
  return listing;
}

// Ceph's tools: the verb decides (`rbd status` looks, `rbd unmap` changes). Options that take a
// value are skipped with it so `rados -p <pool> listwatchers <obj>` finds its verb. Credentials
// (--conf/--keyring/--id) never appear here: they are added below the audit (ceph-access.ts).
const CEPH_VALUE_FLAGS = new Set(['-p', '--pool', '--format', '-f', '--image', '--namespace']);
const CEPH_LOOKS: Record<string, ReadonlySet<string>> = {
  rbd: new Set(['info', 'status', 'showmapped', 'device list', 'device ls', 'ls', 'list']),
  rados: new Set(['listwatchers', 'lspools', 'stat']),
  ceph: new Set(['osd blocklist ls', 'osd blacklist ls', 'status', '-s', 'health']),
};

function cephLooksOnly(file: string, args: readonly string[]): boolean {
  const looks = CEPH_LOOKS[file];
  if (!looks) return false;
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (CEPH_VALUE_FLAGS.has(a)) i++;
    else if (a.startsWith('--format=')) continue;
    else if (a === '-s' && words.length === 0) words.push(a);
    else if (!a.startsWith('-')) words.push(a);
    else return false;
  }
  // Longest verb first: `osd blocklist ls` must not be read as `osd`.
  for (let n = Math.min(3, words.length); n >= 1; n--) if (looks.has(words.slice(0, n).join(' '))) return true;
  return false;
}

// orphaned-pod-volumes reads the pods tree in the host's mount namespace: `find -P <path>
// [-mindepth N] [-maxdepth N] [-xdev] -printf <format>` and nothing else (find's -delete, -exec,
// -execdir, -ok, -fprint* change things or write files), `crictl pods -o json`, `systemctl is-active kubelet`.
const FIND_VALUE_TESTS = new Set(['-mindepth', '-maxdepth']);

function findLooksOnly(args: readonly string[]): boolean {
  if (args.length < 4 || args[0] !== '-P' || !(args[1] ?? '').startsWith('/') || args[args.length - 2] !== '-printf') return false;
  const middle = args.slice(2, -2);
  for (let i = 0; i < middle.length; i++) {
    const a = middle[i] ?? '';
    if (a === '-xdev') continue;
    if (FIND_VALUE_TESTS.has(a) && /^[0-9]{1,3}$/.test(middle[i + 1] ?? '')) {
      i++;
      continue;
    }
    return false;
  }
  return true;
}

const exactly = (argv: readonly string[], shape: readonly string[]): boolean => argv.length === shape.length && shape.every((w, i) => argv[i] === w);

// readonly-filesystem-recovery (docs/decisions/0008 §3.2): the kernel's log of this boot or since a
// time, as JSON, and an ext super block's header. Exact shapes: `journalctl --rotate` or
// `--vacuum-*` change the journal, and `dumpe2fs` without -h still only reads, but is not needed.
const KERNEL_DEVICE_INPUT = /^(\/[^\0]*)?\/dev\/(dm-[0-9]{1,5}|sd[a-z]{1,4}|nvme[0-9]{1,3}n[0-9]{1,3}(p[0-9]{1,3})?|vd[a-z]{1,4}|loop[0-9]{1,7})$/;
const JOURNAL_SINCE = /^--since=[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2})?$/;

/** Newest first, and only the message besides journald's own time and boot: what fits the host's output limit. */
const JOURNAL_SHAPING = new Set(['--reverse', '--output-fields=MESSAGE']);

function journalctlLooksOnly(args: readonly string[]): boolean {
  const [k, o, json, pager, when, ...rest] = args;
  return (
    k === '-k' &&
    o === '-o' &&
    json === 'json' &&
    pager === '--no-pager' &&
    (when === '--boot' || JOURNAL_SINCE.test(when ?? '')) &&
    rest.every((a) => JOURNAL_SHAPING.has(a)) &&
    new Set(rest).size === rest.length
  );
}

/**
 * One direct read of a block device into /dev/null (the residual-map probe's shape). Not of a SCSI
 * disk: that may be a path of a dead map, whose read a dry-run must not leave stuck in D state.
 */
function directReadOnly(args: readonly string[]): boolean {
  const [input, out, count, bs, flag, ...rest] = args;
  const device = (input ?? '').replace(/^if=/, '');
  return (
    rest.length === 0 &&
    KERNEL_DEVICE_INPUT.test(device) &&
    !/\/dev\/sd[a-z]+$/.test(device) &&
    (input ?? '').startsWith('if=') &&
    out === 'of=/dev/null' &&
    count === 'count=1' &&
    bs === 'bs=1M' &&
    flag === 'iflag=direct'
  );
}

export function isReadOnlyCommand(argv: readonly string[]): boolean {
  const [file, ...args] = argv;
  if (file === undefined) return false;
  if (ALWAYS_READ_ONLY.has(file)) return true;
  if (file === 'losetup') return losetupLooksOnly(args);
  if (file === 'blockdev') return args.length === 2 && BLOCKDEV_GETTERS.has(args[0] ?? '');
  if (isMultipathLookOnly(argv)) return true;
  if (file === 'find') return findLooksOnly(args);
  if (exactly(argv, ['crictl', 'pods', '-o', 'json']) || exactly(argv, ['systemctl', 'is-active', 'kubelet'])) return true;
  if (file === 'journalctl') return journalctlLooksOnly(args);
  if (file === 'dmesg') return args.length === 3 && args[0] === '--kernel' && args[1] === '--time-format' && args[2] === 'iso';
  if (file === 'dumpe2fs') return args.length === 2 && args[0] === '-h' && KERNEL_DEVICE_INPUT.test(args[1] ?? '');
  if (file === 'dd') return directReadOnly(args);
  return cephLooksOnly(file, args);
}
