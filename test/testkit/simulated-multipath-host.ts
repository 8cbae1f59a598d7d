// A node with N multipath maps whose every path is dead, for the runbook-scale bench: half of the
// maps queue I/O (`queue_if_no_path`, the read probe hangs until its deadline, as on a real node),
// half fail I/O at once (the probe gets EIO after a few ms). Everything the residual runbook's
// observe step reads is generated in the formats of the lab captures (test/fixtures/multipath):
// `multipath -ll`, `dmsetup info -c`, sysfs and /proc. Probes really wait: the time measured is
// the runbook's, with the simulated kernel answering instantly otherwise.
import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import { FakeHost } from './fake-host.ts';
import type { RunOptions } from '../../workers/host/host.ts';
import { setTimeout as sleep } from 'node:timers/promises';

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

export interface SimulatedMap {
  name: string;
  wwid: string;
  dm: string;
  queueing: boolean;
  paths: Array<{ dev: string; hctl: string; devT: string }>;
}

export class SimulatedMultipathHost extends FakeHost {
  readonly maps: SimulatedMap[];
  /** Probes started and the most that ran at once. */
  probes = 0;
  maxConcurrentProbes = 0;
  #running = 0;

  constructor(count: number, options: { ioErrorMs?: number } = {}) {
    super();
    const ioErrorMs = options.ioErrorMs ?? 5;
    this.maps = Array.from({ length: count }, (_, i) => ({
      name: `mpath${letters(i)}`,
      wwid: `36001405${i.toString(16).padStart(25, '0')}`,
      dm: `dm-${i}`,
      queueing: i % 2 === 0,
      paths: [0, 1].map((p) => {
        const disk = 2 * i + p;
        return { dev: `sd${letters(disk)}`, hctl: `${2 + p}:0:0:${i}`, devT: `${8 + Math.floor(disk / 16) * 57}:${(disk % 16) * 16}` };
      }),
    }));
    for (const m of this.maps) {
      this.put(`/sys/block/${m.dm}/dm/uuid`, `mpath-${m.wwid}\n`);
      this.put(`/sys/block/${m.dm}/dm/name`, `${m.name}\n`);
      this.put(`/sys/block/${m.dm}/dev`, `253:${m.dm.slice(3)}\n`);
      for (const p of m.paths) {
        this.put(`/sys/block/${p.dev}/device`, { type: 'symlink', target: `../../../${p.hctl}` });
        this.put(`/sys/block/${p.dev}/device/state`, 'running\n');
        this.put(`/sys/block/${p.dev}/device/wwid`, `naa.${m.wwid.slice(1)}\n`);
        this.put(`/sys/block/${p.dev}/device/delete`, '');
        this.put(`/sys/block/${p.dev}/dev`, `${p.devT}\n`);
        this.put(`/sys/block/${m.dm}/slaves/${p.dev}`, { type: 'symlink', target: `../../../../platform/${p.dev}` });
        this.put(`/sys/block/${p.dev}/holders/${m.dm}`, { type: 'symlink', target: `../../${m.dm}` });
        this.put(`/dev/disk/by-id/wwn-0x${m.wwid.slice(1)}`, { type: 'symlink', target: `../../${m.dm}` });
      }
    }
    this.put('/proc/1/ns/mnt', { type: 'symlink', target: 'mnt:[4026531840]' });
    this.put('/proc/1/mountinfo', '22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw\n');
    this.put('/proc/1/stat', '1 (systemd) S 0 1 1 0 -1 4194560');
    this.put('/proc/swaps', 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n');

    this.on(['multipath', '-ll'], { stdout: this.#listing() });
    // multipathd's JSON is optional to the runbook; this node's multipathd does not answer.
    this.on(['multipathd', 'show', 'maps', 'json'], { exitCode: 1, stderr: "can't connect to multipathd socket\n" });
    this.on(['dmsetup', 'info', '-c'], { stdout: this.#dmInfo() });
    this.#ioErrorMs = ioErrorMs;
  }

  readonly #ioErrorMs: number;
  #index: Map<string, string[]> | null = null;

  override put(path: string, node: Parameters<FakeHost['put']>[1]): this {
    this.#index = null;
    return super.put(path, node);
  }

  /**
   * FakeHost.list scans every node (fine for a unit test, quadratic with 256 maps): a directory
   * index, so the bench measures the runbook and not the simulator.
   */
  override async list(dir: string): Promise<string[]> {
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
    if (argv[0] !== 'dd') return super.run(argv, options);
    this.calls.push({ op: 'run', args: [...argv] });
    const dm = /^if=\/dev\/(dm-[0-9]+)$/.exec(argv[1] ?? '')?.[1];
    const map = this.maps.find((m) => m.dm === dm);
    const base = { argv: [...argv], signal: null, timedOut: false, stdout: '', stderr: '', exitCode: 0 as number | null };
    this.probes++;
    this.maxConcurrentProbes = Math.max(this.maxConcurrentProbes, ++this.#running);
    const started = performance.now();
    try {
      if (!map) return { ...base, exitCode: 1, durationMs: 0, stderr: `dd: failed to open '${argv[1]}': No such file or directory\n` };
      if (map.queueing) {
        // Queued I/O never answers: the host kills the probe at its deadline.
        await sleep(options?.timeoutMs ?? 10_000);
        return {
          ...base,
          exitCode: null,
          signal: 'SIGKILL',
          timedOut: true,
          durationMs: Math.round(performance.now() - started),
          stuckPids: [],
        };
      }
      await sleep(this.#ioErrorMs);
      return {
        ...base,
        exitCode: 1,
        durationMs: Math.round(performance.now() - started),
        stderr: `dd: error reading '/dev/${map.dm}': Input/output error\n`,
      };
    } finally {
      this.#running--;
    }
  }

  #listing(): string {
    return `${this.maps
      .map((m) =>
        [
          `${m.name} (${m.wwid}) ${m.dm} LIO-ORG,FILEIO`,
          `size=64M features='${m.queueing ? '1 queue_if_no_path' : '0'}' hwhandler='1 alua' wp=rw`,
          "`-+- policy='service-time 0' prio=0 status=enabled",
          ...m.paths.map((p, i) => `  ${i === m.paths.length - 1 ? '`-' : '|-'} ${p.hctl} ${p.dev} ${p.devT} failed faulty running`),
        ].join('\n'),
      )
      .join('\n')}\n`;
  }

  #dmInfo(): string {
    const rows = ['Name             Maj Min Stat Open Targ Event  UUID'];
    for (const m of this.maps) rows.push(`${m.name.padEnd(16)} 253 ${m.dm.slice(3).padStart(3)} L--w    0    1      2 mpath-${m.wwid}`);
    return `${rows.join('\n')}\n`;
  }
}
