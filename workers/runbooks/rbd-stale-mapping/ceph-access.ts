import type { Host } from '../../host/host.ts';

// How the cluster worker reaches Ceph: a ceph.conf, a keyring and a client id, passed to every
// `rbd`/`rados`/`ceph` as `--conf/--keyring/--id`. They are added *below* the audit host, so job
// results, logs and dry-run records show `rbd status pool/img`, never where the keyring lives;
// the values are also masked in what the command prints (a missing keyring is named in stderr).

export interface CephAccess {
  /** Path of ceph.conf; Ceph's default search when absent. */
  conf?: string;
  /** Path of the keyring; Ceph's default when absent. */
  keyring?: string;
  /** Client id without `client.` (e.g. `volume-medic`); `admin` when absent. */
  id?: string;
  /** Deadline of a Ceph command in ms (a dead monitor makes them hang). Default 20 s. */
  timeoutMs?: number;
}

const CEPH_TOOLS = new Set(['rbd', 'rados', 'ceph']);

function cephArgs(access: CephAccess): string[] {
  return [...(access.conf ? ['--conf', access.conf] : []), ...(access.keyring ? ['--keyring', access.keyring] : []), ...(access.id ? ['--id', access.id] : [])];
}

/** Wraps the real host: Ceph tools get the access arguments; everything else passes through. */
export function createCephHost(inner: Host, access: CephAccess): Host {
  const secrets = [access.conf, access.keyring, access.id].filter((v): v is string => !!v && v.length >= 3);
  const mask = (text: string): string => secrets.reduce((t, s) => t.split(s).join('<redacted>'), text);
  // Delegated one by one: `inner` may be a class instance (FakeHost), whose methods a spread would lose.
  return {
    argPath: (p) => inner.argPath(p),
    readFile: (p) => inner.readFile(p),
    writeFile: (p, d) => inner.writeFile(p, d),
    writeSysfs: (p, v) => inner.writeSysfs(p, v),
    symlink: (t, p) => inner.symlink(t, p),
    readlink: (p) => inner.readlink(p),
    lstat: (p) => inner.lstat(p),
    list: (d) => inner.list(d),
    rename: (f, t) => inner.rename(f, t),
    unlink: (p) => inner.unlink(p),
    mkdir: (p) => inner.mkdir(p),
    async run(argv, options) {
      const [file, ...rest] = argv;
      if (!file || !CEPH_TOOLS.has(file)) return inner.run(argv, options);
      const record = await inner.run([file, ...cephArgs(access), ...rest], { timeoutMs: options?.timeoutMs ?? access.timeoutMs ?? 20_000 });
      return { ...record, argv: [...argv], stdout: mask(record.stdout), stderr: mask(record.stderr) };
    },
  };
}
