import { setTimeout as sleep } from 'node:timers/promises';
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import type { RunOptions } from '../../workers/host/host.ts';
import { FakeHost, type FakeAnswer } from './fake-host.ts';

// The node simulator: a small stateful kernel of multipath maps over SCSI disks, in the formats
// of the lab captures (test/fixtures/multipath: `multipath -ll`, `dmsetup info -c`, sysfs, /proc),
// that change the way the real ones do: releasing a map's queue lets its stuck victims go,
// `multipath -f` answers `map in use` while the map is open and otherwise removes it, deleting a
// disk removes it. Each destructive command is recorded with the map it hit, and a crash can be
// injected before or after the n-th one (the agent dying there): the residual runbook's property
// and map-name tests. `MultipathNode.allDead(n)` is the benches' node: n maps whose every path is
// dead, half queueing I/O, with probes that take real time (a queued probe waits out its
// deadline, an I/O error comes after a few ms), so what a bench measures is the runbook's time.
// (The runbook's example-based tests use a node replayed from one real capture instead:
// test/unit/workers/runbooks/residual-multipath-cleanup/fake-node.ts.)

type OpenerKind = 'none' | 'victim' | 'user-d' | 'user-d-host' | 'user-s' | 'victim-name-in-pod';
type ProbeKind = 'hang' | 'io-error' | 'readable';

export interface MapSpec {
  /** Per path: dead (`failed faulty running`) or live (`active ready running`). */
  paths: boolean[];
  queueing: boolean;
  holder: boolean;
  mounted: boolean;
  opener: OpenerKind;
  attached: boolean;
  probe: ProbeKind;
}

export interface Crash {
  /** Index (0-based) of the destructive command at which the agent dies. */
  at: number;
  /** Before the command takes effect, or right after. */
  after: boolean;
}

export interface SimulatedMap {
  index: number;
  name: string;
  wwid: string;
  dm: string;
  spec: MapSpec;
  queueing: boolean;
  disks: Array<{ dev: string; hctl: string; devT: string; dead: boolean }>;
  /** Pids with an fd on the map, and whether each is a victim stuck on its queued I/O. */
  openers: Map<number, { comm: string; state: string; cgroup: string; stuckOnQueue: boolean }>;
}

export interface MultipathNodeOptions {
  crash?: Crash | null;
  /** The maps' names (default mpatha, mpathb, ...), e.g. a hostile alias from multipath.conf. */
  names?: readonly string[];
  /**
   * Probes take real time: a probe of a queueing map waits out its deadline and is killed (no
   * process left behind), one of a failing map gets EIO after `ioErrorMs`. Default: every probe
   * answers at once, a hung one leaving its `dd` stuck on the map as the kernel does.
   */
  realTimeProbes?: { ioErrorMs: number };
  /** A /dev/disk/by-id wwn link to each map. */
  byIdLinks?: boolean;
  /**
   * Lists directories from an index built once (FakeHost.list scans every node: quadratic with
   * hundreds of maps). Only for a node nothing changes: the index is rebuilt on put() alone.
   */
  listIndex?: boolean;
}

export const wwidOf = (i: number): string => `36001405${i.toString(16).padStart(25, '0')}`;

/** 0 -> a, 25 -> z, 26 -> aa (the kernel's sd and mpath naming). */
function letters(i: number): string {
  let s = '';
  let n = i;
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return s;
}

/** Disk n's major:minor: 16 minors a disk, sd's majors 8, then 65, 66, ... */
const devTOf = (n: number): string => `${8 + Math.floor(n / 16) * 57}:${(n % 16) * 16}`;

/** A map whose paths (two) are all dead, nothing on it; queueing or failing I/O. */
const deadMap = (queueing: boolean): MapSpec => ({
  paths: [true, true],
  queueing,
  holder: false,
  mounted: false,
  opener: 'none',
  attached: false,
  probe: 'hang',
});
const POD_CGROUP = '0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_4e5f_4a6b_8c7d_9e0f1a2b3c4d.slice/cri-containerd-aa.scope';

export class MultipathNode extends FakeHost {
  readonly maps: SimulatedMap[];
  /** Probes started and the most that ran at once. */
  probes = 0;
  maxConcurrentProbes = 0;
  #running = 0;
  readonly #o: MultipathNodeOptions;
  #index: Map<string, string[]> | null = null;

  /** The benches' node: `count` maps whose every path is dead, every other one queueing I/O; probes take real time. */
  static allDead(count: number, o: { ioErrorMs?: number } = {}): MultipathNode {
    return new MultipathNode(
      Array.from({ length: count }, (_, i) => deadMap(i % 2 === 0)),
      { realTimeProbes: { ioErrorMs: o.ioErrorMs ?? 5 }, byIdLinks: true, listIndex: true },
    );
  }
  /** Every destructive command that took effect: [kind, map index]. */
  readonly destructive: Array<{ kind: 'release' | 'flush' | 'delete'; map: number; target: string }> = [];
  crash: Crash | null;
  #attempts = 0;
  #nextPid = 5000;

  constructor(specs: readonly MapSpec[], o: MultipathNodeOptions = {}) {
    super();
    this.#o = o;
    this.crash = o.crash ?? null;
    const names = o.names ?? [];
    let disk = 0;
    this.maps = specs.map((spec, i) => {
      const m: SimulatedMap = {
        index: i,
        name: names[i] ?? `mpath${letters(i)}`,
        wwid: wwidOf(i),
        dm: `dm-${i}`,
        spec,
        queueing: spec.queueing,
        disks: spec.paths.map((dead, p) => {
          const n = disk++;
          return { dev: `sd${letters(n)}`, hctl: `${2 + p}:0:0:${i}`, devT: devTOf(n), dead };
        }),
        openers: new Map(),
      };
      return m;
    });
    this.put('/proc/sys/kernel/random/boot_id', 'sim-boot\n');
    this.put('/proc/1/ns/mnt', { type: 'symlink', target: 'mnt:[4026531840]' });
    this.put('/proc/1/mountinfo', '22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n');
    this.put('/proc/1/stat', '1 (systemd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0');
    this.put('/proc/swaps', 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n');
    for (const m of this.maps) {
      this.put(`/sys/block/${m.dm}/dm/uuid`, `mpath-${m.wwid}\n`);
      this.put(`/sys/block/${m.dm}/dm/name`, `${m.name}\n`);
      this.put(`/sys/block/${m.dm}/dev`, `253:${m.index}\n`);
      for (const d of m.disks) {
        this.put(`/sys/block/${d.dev}/device`, { type: 'symlink', target: `../../../${d.hctl}` });
        this.put(`/sys/block/${d.dev}/device/state`, 'running\n');
        this.put(`/sys/block/${d.dev}/device/wwid`, `naa.${m.wwid.slice(1)}\n`);
        this.put(`/sys/block/${d.dev}/device/delete`, '');
        this.put(`/sys/block/${d.dev}/dev`, `${d.devT}\n`);
        this.put(`/sys/block/${m.dm}/slaves/${d.dev}`, { type: 'symlink', target: `../../../../platform/${d.dev}` });
        this.put(`/sys/block/${d.dev}/holders/${m.dm}`, { type: 'symlink', target: `../../${m.dm}` });
      }
      if (o.byIdLinks) this.put(`/dev/disk/by-id/wwn-0x${m.wwid.slice(1)}`, { type: 'symlink', target: `../../${m.dm}` });
      if (m.spec.holder) this.put(`/sys/block/${m.dm}/holders/dm-${50 + m.index}`, { type: 'symlink', target: `../../dm-${50 + m.index}` });
      if (m.spec.mounted) {
        const pid = this.#pid();
        this.put(`/proc/${pid}/ns/mnt`, { type: 'symlink', target: `mnt:[40265330${m.index}]` });
        this.put(`/proc/${pid}/mountinfo`, `900 800 253:${m.index} / /var/lib/kubelet/pods/p${m.index}/mount rw - ext4 /dev/mapper/${m.name} rw\n`);
        this.put(`/proc/${pid}/stat`, `${pid} (pause) S 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 ${pid} 0 0`);
      }
      const allDead = m.disks.length > 0 && m.disks.every((d) => d.dead);
      switch (m.spec.opener) {
        case 'none':
          break;
        case 'victim':
          // A udev worker stuck on queued I/O exists only where I/O queues on a dead map.
          if (allDead && m.queueing) this.#open(m, '(udev-worker)', 'D', '0::/system.slice/systemd-udevd.service', true);
          break;
        case 'user-d':
          this.#open(m, 'postgres', 'D', POD_CGROUP, allDead && m.queueing);
          break;
        case 'user-d-host':
          this.#open(m, 'mysqld', 'D', '0::/system.slice/mysql.service', allDead && m.queueing);
          break;
        case 'user-s':
          this.#open(m, 'java', 'S', '0::/system.slice/app.service', false);
          break;
        case 'victim-name-in-pod':
          this.#open(m, 'blkid', 'D', POD_CGROUP, allDead && m.queueing);
          break;
      }
    }

    this.on(['multipath', '-ll'], (argv) => ({ stdout: this.#listing(argv[2]) }));
    this.on(['multipathd', 'show', 'maps', 'json'], { exitCode: 1, stderr: "can't connect to multipathd socket\n" });
    this.on(['dmsetup', 'info', '-c'], (argv) => ({ stdout: this.#dmInfo(argv[3]) }));
    this.on(['dmsetup', 'table'], (argv) => {
      const m = this.#byName(argv[2]);
      return m
        ? { stdout: `0 131072 multipath ${m.queueing ? '1 queue_if_no_path' : '0'} 0 1 1 service-time 0 1 1 8:0 1\n` }
        : { exitCode: 1, stderr: `Device ${argv[2]} does not exist.\n` };
    });
    this.on(['dmsetup', 'message'], (argv) =>
      this.#destructive('release', this.#byName(argv[2]), argv[2] ?? '', (m) => {
        m.queueing = false;
        for (const [pid, o] of m.openers) if (o.stuckOnQueue) this.#close(m, pid);
      }),
    );
    this.on(['multipath', '-f'], (argv) => {
      const m = this.#byName(argv[2]);
      if (m && m.openers.size > 0) return { exitCode: 1, stdout: `${argv[2]}: map in use\n` };
      return this.#destructive('flush', m, argv[2] ?? '', (x) => this.#removeMap(x));
    });
    this.on(['dd'], (argv) => {
      const m = this.maps.find((x) => argv[1] === `if=/dev/${x.dm}` && this.has(x.dm));
      if (!m) return { exitCode: 1, stderr: `dd: failed to open '${argv[1]}'\n` };
      const live = m.disks.some((d) => !d.dead);
      if (live || m.spec.probe === 'readable') return { exitCode: 0 };
      if (m.queueing && m.spec.probe === 'hang') {
        const pid = this.#open(m, 'dd', 'D', '0::/kubepods.slice/volume-medic-agent', true);
        return { exitCode: null, signal: 'SIGKILL', timedOut: true, durationMs: 10_000, stuckPids: [pid] };
      }
      return { exitCode: 1, stderr: `dd: error reading '/dev/${m.dm}': Input/output error\n` };
    });
    this.on(['udevadm', 'settle'], {});
  }

  override async writeSysfs(path: string, value: string): Promise<void> {
    const dev = /^\/sys\/block\/(sd[a-z]+)\/device\/delete$/.exec(path)?.[1];
    const m = dev ? this.maps.find((x) => x.disks.some((d) => d.dev === dev)) : undefined;
    if (dev && value === '1') {
      const answer = this.#destructive('delete', m, dev, () => {
        for (const key of [...this.nodes.keys()]) if (key.startsWith(`/sys/block/${dev}/`)) this.nodes.delete(key);
      });
      if (answer.exitCode === 99) throw new Error(answer.stderr);
      this.calls.push({ op: 'writeSysfs', args: [path, value] });
      return;
    }
    await super.writeSysfs(path, value);
  }

  has(device: string): boolean {
    const prefix = `/sys/block/${device}/`;
    for (const k of this.nodes.keys()) if (k.startsWith(prefix)) return true;
    return false;
  }

  #destructive(kind: 'release' | 'flush' | 'delete', m: SimulatedMap | undefined, target: string, effect: (m: SimulatedMap) => void): FakeAnswer {
    if (!m) return { exitCode: 1, stderr: `no such device ${target}` };
    const n = this.#attempts++;
    const crash = this.crash && this.crash.at === n ? this.crash : null;
    if (crash && !crash.after) {
      this.crash = null;
      return { exitCode: 99, stderr: 'the agent died here (before)' };
    }
    effect(m);
    this.destructive.push({ kind, map: m.index, target });
    if (crash) {
      this.crash = null;
      return { exitCode: 99, stderr: 'the agent died here (after)' };
    }
    return {};
  }

  override put(path: string, node: Parameters<FakeHost['put']>[1]): this {
    this.#index = null;
    return super.put(path, node);
  }

  override async list(dir: string): Promise<string[]> {
    if (!this.#o.listIndex) return super.list(dir);
    if (!this.#index) {
      const index = new Map<string, Set<string>>();
      for (const key of this.nodes.keys()) {
        const parts = key.split('/');
        for (let i = 1; i < parts.length; i++) {
          const parent = parts.slice(0, i).join('/') || '/';
          let children = index.get(parent);
          if (!children) index.set(parent, (children = new Set()));
          children.add(parts[i]!);
        }
      }
      this.#index = new Map([...index].map(([k, v]) => [k, [...v].sort()]));
    }
    return [...(this.#index.get(dir.replace(/\/$/, '') || '/') ?? [])];
  }

  override async run(argv: readonly string[], options?: RunOptions): Promise<CommandRecord> {
    if (argv[0] !== 'dd') return this.#unlessCrashed(await super.run(argv, options));
    this.probes++;
    this.maxConcurrentProbes = Math.max(this.maxConcurrentProbes, ++this.#running);
    try {
      const timed = this.#o.realTimeProbes;
      return timed ? await this.#timedProbe(argv, timed.ioErrorMs, options) : this.#unlessCrashed(await super.run(argv, options));
    } finally {
      this.#running--;
    }
  }

  /** A crash is the agent's death, not a failed command: nothing after it runs in this job. */
  #unlessCrashed(r: CommandRecord): CommandRecord {
    if (r.exitCode === 99) throw new Error(r.stderr);
    return r;
  }

  async #timedProbe(argv: readonly string[], ioErrorMs: number, options?: RunOptions): Promise<CommandRecord> {
    this.calls.push({ op: 'run', args: [...argv] });
    const m = this.maps.find((x) => argv[1] === `if=/dev/${x.dm}` && this.has(x.dm));
    const base = { argv: [...argv], signal: null, timedOut: false, stdout: '', stderr: '', exitCode: 0 as number | null };
    const started = performance.now();
    if (!m) return { ...base, exitCode: 1, durationMs: 0, stderr: `dd: failed to open '${argv[1]}'\n` };
    if (m.disks.some((d) => !d.dead) || m.spec.probe === 'readable') return { ...base, durationMs: 0 };
    if (m.queueing && m.spec.probe === 'hang') {
      // Queued I/O never answers: the host kills the probe at its deadline.
      await sleep(options?.timeoutMs ?? 10_000);
      return { ...base, exitCode: null, signal: 'SIGKILL', timedOut: true, durationMs: Math.round(performance.now() - started), stuckPids: [] };
    }
    await sleep(ioErrorMs);
    return { ...base, exitCode: 1, durationMs: Math.round(performance.now() - started), stderr: `dd: error reading '/dev/${m.dm}': Input/output error\n` };
  }

  #pid(): number {
    return this.#nextPid++;
  }

  #open(m: SimulatedMap, comm: string, state: string, cgroup: string, stuckOnQueue: boolean): number {
    const pid = this.#pid();
    m.openers.set(pid, { comm, state, cgroup, stuckOnQueue });
    this.put(`/proc/${pid}/ns/mnt`, { type: 'symlink', target: 'mnt:[4026531840]' });
    this.put(`/proc/${pid}/mountinfo`, '22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n');
    this.put(`/proc/${pid}/stat`, `${pid} (${comm}) ${state} 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 ${pid * 7} 0 0`);
    this.put(`/proc/${pid}/cgroup`, `${cgroup}\n`);
    this.put(`/proc/${pid}/fd/3`, { type: 'symlink', target: `/dev/${m.dm}` });
    return pid;
  }

  #close(m: SimulatedMap, pid: number): void {
    m.openers.delete(pid);
    for (const key of [...this.nodes.keys()]) if (key.startsWith(`/proc/${pid}/`)) this.nodes.delete(key);
  }

  #removeMap(m: SimulatedMap): void {
    for (const key of [...this.nodes.keys()]) if (key.startsWith(`/sys/block/${m.dm}/`)) this.nodes.delete(key);
    for (const d of m.disks) this.nodes.delete(`/sys/block/${d.dev}/holders/${m.dm}`);
  }

  #byName(name: string | undefined): SimulatedMap | undefined {
    return this.maps.find((m) => m.name === name && this.has(m.dm));
  }

  #listing(only?: string): string {
    return `${this.maps
      .filter((m) => this.has(m.dm) && (!only || m.name === only))
      .map((m) => {
        const disks = m.disks.filter((d) => this.has(d.dev));
        return [
          `${m.name} (${m.wwid}) ${m.dm} LIO-ORG,FILEIO`,
          `size=64M features='${m.queueing ? '1 queue_if_no_path' : '0'}' hwhandler='1 alua' wp=rw`,
          "`-+- policy='service-time 0' prio=0 status=enabled",
          ...disks.map(
            (d, i) => `  ${i === disks.length - 1 ? '`-' : '|-'} ${d.hctl} ${d.dev} ${d.devT} ${d.dead ? 'failed faulty running' : 'active ready running'}`,
          ),
        ].join('\n');
      })
      .join('\n')}\n`;
  }

  #dmInfo(only?: string): string {
    const rows = ['Name             Maj Min Stat Open Targ Event  UUID'];
    for (const m of this.maps) {
      if (!this.has(m.dm) || (only && m.name !== only)) continue;
      rows.push(`${m.name.padEnd(16)} 253 ${String(m.index).padStart(3)} L--w ${String(m.openers.size).padStart(4)}    1      2 mpath-${m.wwid}`);
    }
    return `${rows.join('\n')}\n`;
  }
}
