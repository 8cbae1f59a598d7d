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

export function isReadOnlyCommand(argv: readonly string[]): boolean {
  const [file, ...args] = argv;
  if (file === undefined) return false;
  if (ALWAYS_READ_ONLY.has(file)) return true;
  if (file === 'losetup') return losetupLooksOnly(args);
  if (file === 'blockdev') return args.length === 2 && BLOCKDEV_GETTERS.has(args[0] ?? '');
  if (isMultipathLookOnly(argv)) return true;
  if (file === 'find') return findLooksOnly(args);
  if (exactly(argv, ['crictl', 'pods', '-o', 'json']) || exactly(argv, ['systemctl', 'is-active', 'kubelet'])) return true;
  return cephLooksOnly(file, args);
}
