import { RefusedError } from '../../../src/core/errors.ts';
import type { StepExecutor } from '../../engine/runbook.ts';
import { wasSimulated } from '../../host/audit-host.ts';
import { expectOk } from '../../host/command-failed.ts';
import type { Host } from '../../host/host.ts';
import { describeMount } from './orphan-evidence.ts';
import { holdersOfTree, isRegularFile, listDir, mountsOfTree, readMounts, runtimeUids, statPath, type PathStat } from './node-reads.ts';
import type { OrphanKube } from './orphan-kube.ts';
import type { OrphanStep } from './step.ts';
import { readVolData, VOL_DATA_MAX_BYTES } from './vol-data.ts';

// Check-then-change, one path per step. `isDone`: the path is gone. `apply` re-reads right before
// the change, because rmdir(2) succeeds on a directory that is a mount point only in *another*
// mount namespace and silently detaches that mount (docs/decisions/0008 §1.2): every
// /proc/<pid>/mountinfo is read again now, the last read before the argv runs. The window between
// that read and the syscall is not closed (no kernel interface makes "rmdir unless mounted
// anywhere" atomic); the UID being unknown to the API server and the runtime narrows it.
// `unlink` and `rmdir` run in the host's mount namespace (the Host's nsenter), so rmdir meets the
// host's own mounts as EBUSY; ENOTEMPTY/EBUSY fail the step and the job plans again. Never rm,
// never recursive.

export interface ExecuteDeps {
  kube: OrphanKube;
}

const TIMEOUT_MS = 30_000;

// A dry-run host only records unlink and rmdir. So that a dry-run shows every step's argv (the
// directory above is empty once the plan's earlier steps ran), the paths it only pretended to
// remove are remembered per host and left out of the emptiness check. Enforce never sees them.
const simulatedGone = new WeakMap<Host, Set<string>>();

const refuse = (reason: string): never => {
  throw new RefusedError([reason]);
};

async function checkMounts(host: Host, step: OrphanStep): Promise<void> {
  const view = await readMounts(host, step.podsDir);
  const mounts = await mountsOfTree(host, view, step.podDir);
  const at = mounts.filter((m) => m.how === 'at-or-under');
  if (at.length) refuse(`mounted-in-namespace: ${at.map(describeMount).join('; ')} (read right before ${step.id})`);
  const binds = mounts.filter((m) => m.how === 'source-under');
  if (binds.length) refuse(`bind-source-under-tree: ${binds.map(describeMount).join('; ')} (read right before ${step.id})`);
}

function checkOnPodsFs(step: OrphanStep, s: PathStat): void {
  if (s.dev !== step.podsDev) refuse(`crosses-filesystem: ${step.path} is on st_dev ${s.dev}, not ${step.podsDev} (that of ${step.podsDir})`);
}

async function checkFile(host: Host, step: Extract<OrphanStep, { kind: 'unlink-vol-data' | 'unlink-kubelet-file' }>, s: PathStat): Promise<void> {
  if (!isRegularFile(s)) refuse(`entry-not-ours: ${step.path} is now a ${s.type}, not a regular file`);
  checkOnPodsFs(step, s);
  const holders = await holdersOfTree(host, step.podDir);
  if (holders.length) refuse(`held-by-process: ${holders.map((h) => `pid ${h.pid} (${h.comm}) ${h.link} -> ${h.target}`).join('; ')}`);
  const runtime = await runtimeUids(host);
  if (!runtime.known) refuse(`runtime-unknown: ${runtime.why}`);
  if (runtime.known && runtime.value.includes(step.uid)) refuse(`pod-known-to-runtime: a sandbox of pod ${step.uid} is listed now`);
}

async function checkVolData(host: Host, step: Extract<OrphanStep, { kind: 'unlink-vol-data' }>, s: PathStat, kube: OrphanKube): Promise<void> {
  if (s.size > VOL_DATA_MAX_BYTES) refuse(`vol-data-unreadable: ${step.path} is ${s.size} bytes`);
  const v = await readVolData(host, step.path);
  if (typeof v === 'string') refuse(`vol-data-unreadable: ${step.path}: ${v}`);
  else if (v?.nodeName !== step.node) refuse(`vol-data-unreadable: ${step.path} names node ${v?.nodeName}, not ${step.node}`);
  const view = await readMounts(host, step.podsDir);
  const staged = view.mounts.filter((m) => step.stagingPaths.includes(m.entry.mountPoint));
  if (staged.length) refuse(`volume-still-staged: ${step.volume} is staged at ${staged.map((m) => m.entry.mountPoint).join(', ')}`);
  let attached: string[];
  try {
    attached = await kube.attachedPvs(step.node);
  } catch (err) {
    return refuse(`volume-still-staged: the VolumeAttachments of ${step.node} are unknown: ${(err as Error).message}`);
  }
  if (attached.includes(step.pv)) refuse(`volume-still-staged: a VolumeAttachment of ${step.node} names ${step.pv}`);
}

async function checkDir(host: Host, step: OrphanStep, s: PathStat): Promise<void> {
  if (s.type !== 'directory') refuse(`entry-not-ours: ${step.path} is now a ${s.type}, not a directory`);
  checkOnPodsFs(step, s);
  const inside = await listDir(host, step.path);
  if (!inside.known) refuse(`pod-tree-unreadable: ${inside.known ? '' : inside.why}`);
  const gone = simulatedGone.get(host);
  const left = inside.known ? inside.value.filter((name) => !gone?.has(`${step.path}/${name}`)) : [];
  if (left.length) refuse(`entry-not-ours: ${step.path} is not empty now: ${left.slice(0, 10).join(', ')}`);
}

export function createStepExecutor(deps: ExecuteDeps): StepExecutor<OrphanStep> {
  return {
    async isDone(step, host) {
      return (await statPath(host, step.path)) === null;
    },
    async apply(step, host) {
      const s = await statPath(host, step.path);
      if (s === null) return;
      switch (step.kind) {
        case 'unlink-vol-data':
          await checkFile(host, step, s);
          await checkVolData(host, step, s, deps.kube);
          break;
        case 'unlink-kubelet-file':
          await checkFile(host, step, s);
          break;
        case 'rmdir':
          await checkDir(host, step, s);
          break;
        default: {
          const never: never = step;
          return never;
        }
      }
      // Last: the mount tables of every namespace, read now.
      await checkMounts(host, step);
      const argv = step.kind === 'rmdir' ? ['rmdir', '--', host.argPath(step.path)] : ['unlink', '--', host.argPath(step.path)];
      const r = expectOk(await host.run(argv, { timeoutMs: TIMEOUT_MS }));
      if (wasSimulated(r)) simulatedGone.set(host, (simulatedGone.get(host) ?? new Set()).add(step.path));
    },
  };
}
