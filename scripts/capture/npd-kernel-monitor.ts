import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { startFakeKubeApi } from '../../test/testkit/fake-kube-api.ts';

// A one-off capture of what real node-problem-detector writes to the API server, for
// test/fixtures/npd/captured/ (test/fixtures/README.md says when and with which NPD). Not run in CI:
// it needs an NPD binary, root, the machine's /dev/kmsg and systemd-journal-remote.
//
// Usage (as root). NPD from its mirror, offline (Go 1.23, the tag's vendored modules):
//   git --git-dir=<mirror> archive v0.8.20 | tar -x -C /tmp/npd-src && cd /tmp/npd-src &&
//   GOFLAGS=-mod=vendor GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=1 go build -tags journald \
//     -ldflags '-X k8s.io/node-problem-detector/pkg/version.version=v0.8.20' -o /tmp/npd ./cmd/nodeproblemdetector
// (journald needs libsystemd-dev; the journal file needs systemd-journal-remote). The captures of
// test/fixtures/npd/captured/ (kernel-monitor.json from tag v0.8.21, the rest of v0.8.20; the
// DaemonSet's two files are the `data` of deployment/node-problem-detector-config.yaml):
//   node scripts/capture/npd-kernel-monitor.ts --npd /tmp/npd --node worker-3 --out test/fixtures/npd/captured/image \
//     --kmsg-monitor kernel-monitor.v0.8.21.json --kmsg-monitor readonly-monitor.v0.8.20.json \
//     --journald-monitor deploy/integrations/npd/kubelet-orphaned-pod-monitor.json \
//     --kubelet-lines test/fixtures/kubelet/orphaned-glog.txt --kubelet-lines test/fixtures/kubelet/orphaned-subpaths-glog.txt \
//     --kubelet-lines test/fixtures/kubelet/orphaned-klog-structured.txt \
//     --kmsg 'EXT4-fs (dm-93): Remounting filesystem read-only' \
//     --kmsg 'XFS (dm-94): Log I/O Error (0x2) detected at xlog_ioend_work+0x6e/0x70 [xfs] (fs/xfs/xfs_log.c:1378).  Shutting down filesystem.' \
//     --expect FilesystemIsReadOnly --expect XfsHasShutdown --expect OrphanedPodVolumes --timeout-s 40
//   node scripts/capture/npd-kernel-monitor.ts --npd /tmp/npd --node worker-5 --out test/fixtures/npd/captured/daemonset \
//     --kmsg-monitor daemonset-kernel-monitor.v0.8.20.json --kmsg-monitor daemonset-readonly-monitor.v0.8.20.json \
//     --kmsg 'EXT4-fs (dm-93): Remounting filesystem read-only' --expect FilesystemIsReadOnly --timeout-s 40
// The lines go into this machine's kernel log: use device names no device here has.
//
// What it does:
// - starts test/testkit/fake-kube-api.ts with the Node `--node`, and runs NPD against it
//   (`--apiserver-override=<url>?inClusterConfig=false`, `--hostname-override=<node>`, no
//   Prometheus or problem-metrics ports) with the monitor configs as given (kmsg ones unchanged);
// - writes each `--kmsg` line into /dev/kmsg, the way NPD's own e2e tests inject kernel lines;
// - for a journald monitor: writes kubelet's lines (each `--kubelet-lines` file, its syslog prefix
//   `Mon DD HH:MM:SS host kubelet: ` cut, since the journal's MESSAGE is kubelet's own text) as
//   journal entries (SYSLOG_IDENTIFIER=kubelet) into a journal file of a temporary folder with
//   systemd-journal-remote, and passes a copy of the config whose `logPath` is that folder (the only
//   change);
// - waits for an Event with each `--expect` reason, then writes `<out>/node.json` (the Node as the
//   fake stored it after NPD's status patches), `<out>/<reason>-<n>.event.json` (each Event as the
//   fake stored it) and `<out>/requests.json` (every request NPD made: method, path, content type,
//   body as decoded).

const run = promisify(execFile);

const { values: opts } = parseArgs({
  options: {
    npd: { type: 'string' },
    node: { type: 'string', default: 'worker-3' },
    out: { type: 'string' },
    'kmsg-monitor': { type: 'string', multiple: true, default: [] },
    'journald-monitor': { type: 'string', multiple: true, default: [] },
    kmsg: { type: 'string', multiple: true, default: [] },
    'kubelet-lines': { type: 'string', multiple: true, default: [] },
    expect: { type: 'string', multiple: true, default: [] },
    'journal-remote': { type: 'string', default: '/lib/systemd/systemd-journal-remote' },
    'timeout-s': { type: 'string', default: '90' },
  },
});
if (!opts.npd || !opts.out) throw new Error('--npd <binary> and --out <folder> are required (see the top of this file)');

const SYSLOG_PREFIX = /^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kubelet(\[\d+\])?: /;

/** Journal export format: one entry per kubelet line, stamped now, as journald stores kubelet's stderr. */
function journalExport(lines: string[]): string {
  const now = BigInt(Date.now()) * 1000n;
  return lines
    .map((line, i) =>
      [
        `__REALTIME_TIMESTAMP=${now + BigInt(i)}`,
        `__MONOTONIC_TIMESTAMP=${i + 1}`,
        '_BOOT_ID=5e1f2c3d4b5a69788796a5b4c3d2e1f0',
        'SYSLOG_IDENTIFIER=kubelet',
        '_TRANSPORT=stdout',
        '_SYSTEMD_UNIT=kubelet.service',
        'PRIORITY=3',
        `MESSAGE=${line.replace(SYSLOG_PREFIX, '')}`,
        '',
      ].join('\n'),
    )
    .join('\n');
}

async function writeJournal(dir: string, lines: string[]): Promise<void> {
  const child = spawn(opts['journal-remote'], ['-o', join(dir, 'kubelet.journal'), '-'], { stdio: ['pipe', 'inherit', 'inherit'], timeout: 20_000 });
  child.stdin.end(`${journalExport(lines)}\n`);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`systemd-journal-remote exited ${code}`);
}

function journaldConfigs(work: string): string[] {
  if (opts['journald-monitor'].length === 0) return [];
  return opts['journald-monitor'].map((path, i) => {
    const config = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    const copy = join(work, `journald-monitor-${i}.json`);
    writeFileSync(copy, JSON.stringify({ ...config, logPath: join(work, 'journal') }, null, 2));
    return copy;
  });
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const out = resolve(opts.out!);
  const work = mkdtempSync(join(tmpdir(), 'npd-capture-'));
  const api = await startFakeKubeApi();
  api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: opts.node, labels: { 'kubernetes.io/hostname': opts.node } }, status: { conditions: [] } });
  const kubeletLines = opts['kubelet-lines'].flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean));
  mkdirSync(join(work, 'journal'));
  if (kubeletLines.length > 0) await writeJournal(join(work, 'journal'), kubeletLines);
  const monitors = [...opts['kmsg-monitor'].map((p) => resolve(p)), ...journaldConfigs(work)];
  const args = [
    `--apiserver-override=${api.url}?inClusterConfig=false`,
    `--hostname-override=${opts.node}`,
    `--config.system-log-monitor=${monitors.join(',')}`,
    '--port=0',
    '--prometheus-port=0',
    '--logtostderr',
    '--v=2',
  ];
  console.log(`${opts.npd} ${args.join(' ')}`);
  const npd: ChildProcess = spawn(opts.npd!, args, { stdio: ['ignore', 'inherit', 'inherit'], timeout: (Number(opts['timeout-s']) + 30) * 1000 });
  try {
    const timeoutMs = Number(opts['timeout-s']) * 1000;
    // NPD patches the Node's default conditions once its monitors started: the kmsg reader is open.
    await waitFor(() => api.requestsTo('PATCH', `/api/v1/nodes/${opts.node}/status`).length > 0, timeoutMs, "NPD's first status patch");
    for (const line of opts.kmsg) writeFileSync('/dev/kmsg', `${line}\n`);
    const reasons = (): string[] => api.list('v1', 'Event').map((e) => String(e['reason']));
    await waitFor(() => opts.expect.every((r) => reasons().includes(r)), timeoutMs, `Events ${opts.expect.join(', ')}`);
    // Let the condition patch that goes with a permanent rule's Event land too.
    await new Promise((r) => setTimeout(r, 3000));
  } finally {
    npd.kill('SIGTERM');
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const write = (name: string, o: unknown): void => writeFileSync(join(out, name), `${JSON.stringify(o, null, 2)}\n`);
  write('node.json', api.get('v1', 'Node', opts.node!));
  const seen = new Map<string, number>();
  for (const e of api.list('v1', 'Event')) {
    const n = (seen.get(String(e['reason'])) ?? 0) + 1;
    seen.set(String(e['reason']), n);
    write(`${e['reason']}-${n}.event.json`, e);
  }
  write(
    'requests.json',
    api.requests.map((r) => ({ method: r.method, path: r.path, query: r.query, contentType: r.contentType, body: r.body })),
  );
  await api.close();
  const { stdout } = await run(opts.npd!, ['--version'], { timeout: 10_000 });
  console.log(`captured into ${out} (NPD ${stdout.trim()})`);
  rmSync(work, { recursive: true, force: true });
}

await main();
