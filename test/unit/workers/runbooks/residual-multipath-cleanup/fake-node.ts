import { FakeHost } from '../../../../testkit/fake-host.ts';
import { captured } from './real-fixtures.ts';

// A node as the lab's iscsi-lun-removed capture shows it, in a FakeHost: mpathb (dm-0, sdc+sdd)
// dead with queue_if_no_path and a udev worker stuck on it; mpathc (dm-1, sda+sdb) healthy and
// mounted at /mnt/healthy. Commands answer from the real captures and change the fake kernel
// state the way the real one does: releasing the queue lets the stuck openers go, `multipath -f`
// removes the map (answering `map in use` while it is open), deleting a disk removes it.

const DEAD = '3600140503b080d39e3f42d4a24115262';
const LIVE = '360014053b393903d0d44fca9b746fc94';
const INIT_NS = 'mnt:[4026531840]';

const disks = {
  sda: { hctl: '2:0:0:0', devT: '8:0', wwid: LIVE },
  sdb: { hctl: '3:0:0:0', devT: '8:16', wwid: LIVE },
  sdc: { hctl: '2:0:0:1', devT: '8:32', wwid: DEAD },
  sdd: { hctl: '3:0:0:1', devT: '8:48', wwid: DEAD },
} as const;

export interface FakeNodeOptions {
  /** How the read probe of dm-0 ends. Default: hangs past the deadline and leaves pid 990 stuck. */
  probe?: 'hang' | 'io-error';
  /** `multipath -f` answers `map in use` while the map is open (true, the real behaviour). */
  flushRefusesWhileOpen?: boolean;
}

export class FakeNode extends FakeHost {
  queueing = true;
  /** Pids with an fd on dm-0 (stuck in D while the map queues). */
  stuck = new Set<number>([857]);
  flushAttempts = 0;

  readonly options: FakeNodeOptions;

  constructor(options: FakeNodeOptions = {}) {
    super();
    this.options = options;
    for (const [name, d] of Object.entries(disks)) this.#disk(name, d);
    this.#map('dm-0', 'mpathb', DEAD, '253:0', ['sdc', 'sdd']);
    this.#map('dm-1', 'mpathc', LIVE, '253:1', ['sda', 'sdb']);
    for (const line of captured('iscsi-lun-removed', 'dev-disk-by-id.txt').split('\n')) {
      const m = / (\S+) -> (\S+)$/.exec(line);
      if (m?.[1] && m[2]) this.put(`/dev/disk/by-id/${m[1]}`, { type: 'symlink', target: m[2] });
    }
    this.put('/proc/1/ns/mnt', { type: 'symlink', target: INIT_NS });
    this.put('/proc/1/mountinfo', captured('iscsi-lun-removed', 'proc-self-mountinfo.txt'));
    this.put('/proc/1/stat', '1 (init) S 0 1 1 0 -1 4194560');
    this.put('/proc/swaps', 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n');
    // The capture's own stuck opener (ps-d-state.txt): comm `(udev-worker)`, as systemd 252 names its workers.
    this.#opener(857, '(udev-worker)');

    this.on(['multipath', '-ll'], (argv) => ({ stdout: this.#listing(argv[2]) }));
    this.on(['multipathd', 'show', 'maps', 'json'], () => ({
      stdout: this.nodes.has('/sys/block/dm-0/dm/uuid')
        ? captured('iscsi-lun-removed', 'multipathd-show-maps-json.json')
        : '{"major_version": 0, "minor_version": 1, "maps": []}',
    }));
    this.on(['dmsetup', 'info', '-c'], () => ({ stdout: this.#dmInfo() }));
    this.on(['dd'], (argv) => {
      if (argv[1] !== 'if=/dev/dm-0') return { stderr: `dd: unexpected probe ${argv[1]}`, exitCode: 1 };
      if (this.options.probe === 'io-error') return { exitCode: 1, stderr: "dd: error reading '/dev/dm-0': Input/output error\n" };
      this.#opener(990, 'dd');
      this.stuck.add(990);
      return { exitCode: null, signal: 'SIGKILL', timedOut: true, durationMs: 12_050, stuckPids: [990] };
    });
    this.on(['dmsetup', 'table'], () => ({
      stdout: `0 131072 multipath ${this.queueing ? '1 queue_if_no_path' : '0'} 1 alua 1 1 service-time 0 2 2 8:48 1 1 8:32 1 1\n`,
    }));
    this.on(['dmsetup', 'message', 'mpathb', '0', 'fail_if_no_path'], () => {
      this.queueing = false;
      for (const pid of this.stuck) this.#gone(pid);
      this.stuck.clear();
      return {};
    });
    this.on(['multipath', '-f'], (argv) => {
      this.flushAttempts++;
      if (argv[2] !== 'mpathb') return { exitCode: 1, stdout: `fake: refusing to flush ${argv[2]}` };
      if ((this.options.flushRefusesWhileOpen ?? true) && this.stuck.size > 0) return { exitCode: 1, stdout: '98.959864 | mpathb: map in use\n' };
      for (const key of [...this.nodes.keys()])
        if (key.startsWith('/sys/block/dm-0/') || key === '/dev/dm-0' || key === '/dev/mapper/mpathb') this.nodes.delete(key);
      for (const s of ['sdc', 'sdd']) this.nodes.delete(`/sys/block/${s}/holders/dm-0`);
      this.#dropLinksTo('dm-0');
      return {};
    });
    this.on(['udevadm', 'settle'], {});
  }

  override async writeSysfs(path: string, value: string): Promise<void> {
    await super.writeSysfs(path, value);
    const m = /^\/sys\/block\/(sd[a-z]+)\/device\/delete$/.exec(path);
    if (m?.[1] && value === '1') {
      for (const key of [...this.nodes.keys()]) if (key.startsWith(`/sys/block/${m[1]}/`)) this.nodes.delete(key);
      this.#dropLinksTo(m[1]);
    }
  }

  /** Whether the map / disk still exists in the fake kernel. */
  has(device: string): boolean {
    return [...this.nodes.keys()].some((k) => k.startsWith(`/sys/block/${device}/`));
  }

  #disk(name: string, d: { hctl: string; devT: string; wwid: string }): void {
    this.put(`/sys/block/${name}/device`, { type: 'symlink', target: `../../../${d.hctl}` });
    this.put(`/sys/block/${name}/device/state`, 'running\n');
    this.put(`/sys/block/${name}/device/wwid`, `naa.${d.wwid.slice(1)}\n`);
    this.put(`/sys/block/${name}/device/delete`, '');
    this.put(`/sys/block/${name}/dev`, `${d.devT}\n`);
  }

  #map(dm: string, name: string, wwid: string, devT: string, slaves: string[]): void {
    this.put(`/sys/block/${dm}/dm/uuid`, `mpath-${wwid}\n`);
    this.put(`/sys/block/${dm}/dm/name`, `${name}\n`);
    this.put(`/sys/block/${dm}/dev`, `${devT}\n`);
    for (const s of slaves) {
      this.put(`/sys/block/${dm}/slaves/${s}`, { type: 'symlink', target: `../../../../platform/${s}` });
      this.put(`/sys/block/${s}/holders/${dm}`, { type: 'symlink', target: `../../${dm}` });
    }
  }

  /** A process with an fd on `device` (default the dead map), in `state`, in `cgroup` (default: a system service). */
  addOpener(pid: number, comm: string, opts: { state?: string; device?: string; cgroup?: string } = {}): void {
    this.#opener(pid, comm, opts);
  }

  #opener(pid: number, comm: string, opts: { state?: string; device?: string; cgroup?: string } = {}): void {
    this.put(`/proc/${pid}/ns/mnt`, { type: 'symlink', target: INIT_NS });
    this.put(`/proc/${pid}/mountinfo`, '');
    // Fields 3..22 of /proc/<pid>/stat: the start time (field 22) tells one process from a later one with its pid.
    this.put(`/proc/${pid}/stat`, `${pid} (${comm}) ${opts.state ?? 'D'} 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 ${5000 + pid} 0 0`);
    this.put(`/proc/${pid}/cgroup`, `${opts.cgroup ?? `0::/system.slice/${comm.replace(/[()]/g, '')}.service`}\n`);
    this.put(`/proc/${pid}/fd/5`, { type: 'symlink', target: opts.device ?? '/dev/dm-0' });
  }

  #gone(pid: number): void {
    for (const key of [...this.nodes.keys()]) if (key.startsWith(`/proc/${pid}/`)) this.nodes.delete(key);
  }

  #dropLinksTo(dev: string): void {
    for (const [key, node] of [...this.nodes])
      if (key.startsWith('/dev/disk/by-id/') && node.type === 'symlink' && node.target === `../../${dev}`) this.nodes.delete(key);
  }

  #listing(only?: string): string {
    const text = captured('iscsi-lun-removed', 'multipath-ll.txt');
    const blocks = text.split(/\n(?=mpath)/).map((b) => b.trimEnd());
    return blocks
      .filter((b) => (b.startsWith('mpathb') ? this.has('dm-0') : true))
      .filter((b) => !only || b.startsWith(`${only} `))
      .map((b) => `${b}\n`)
      .join('');
  }

  #dmInfo(): string {
    const rows = ['Name             Maj Min Stat Open Targ Event  UUID'];
    if (this.has('dm-0')) rows.push(`mpathb           253   0 L--w    ${this.stuck.size}    1      2 mpath-${DEAD}`);
    rows.push(`mpathc           253   1 L--w    1    1      0 mpath-${LIVE}`);
    return `${rows.join('\n')}\n`;
  }
}
