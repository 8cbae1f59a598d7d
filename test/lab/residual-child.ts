// The residual-multipath runbook as a process of its own, so a lab test can SIGKILL it at an exact
// point (residual-safety.lab.test.ts: between `multipath -f` and the disk deletes). It runs the
// real handler over guestHost; every guest command goes to the parent over the IPC channel, and
// the parent runs it on the lab VM (the VM's command channel is one socket, held by the parent).
// The parent can therefore see the command the runbook is about to run and kill this process
// before it reaches the guest: no catch, no finally, no journal write runs after that point, as
// when a node agent is OOM-killed.
//
//   fork('test/lab/residual-child.ts', [JSON.stringify(ChildJob)], { execArgv: [], stdio: [..., 'ipc'] })
//   child -> parent  { t: 'run', id, cmd, opts }      parent -> child  { t: 'ran', id, result }
//   child -> parent  { t: 'done', outcome, summary } | { t: 'error', name, message }
import { pino } from 'pino';
import type { ResidualMultipathJob } from '../../src/core/catalogue/jobs.ts';
import { ParkedError } from '../../workers/engine/gate.ts';
import { InMemoryAttachedVolumes } from '../../workers/runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createResidualMultipathCleanup } from '../../workers/runbooks/residual-multipath-cleanup/handler.ts';
import type { ResidualPolicy } from '../../workers/runbooks/residual-multipath-cleanup/policy.ts';
import { guestHost, type GuestCommands } from './guest-host.ts';
import type { RunOptions, RunResult } from './vm.ts';

export interface ChildJob {
  key: string;
  stateDir: string;
  policy: Partial<ResidualPolicy>;
}

export type ToParent =
  | { t: 'run'; id: number; cmd: readonly string[] | string; opts?: RunOptions }
  | { t: 'done'; outcome: string; summary: string }
  | { t: 'error'; name: string; message: string };
export type ToChild = { t: 'ran'; id: number; result: RunResult };

const send = (m: ToParent): void => {
  process.send?.(m);
};

const pending = new Map<number, (r: RunResult) => void>();
let nextId = 0;
process.on('message', (m: ToChild) => {
  if (m.t === 'ran') {
    pending.get(m.id)?.(m.result);
    pending.delete(m.id);
  }
});

const relay: GuestCommands = {
  run: (cmd, opts) =>
    new Promise<RunResult>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      send({ t: 'run', id, cmd, ...(opts ? { opts } : {}) });
    }),
  async runOk(cmd, opts) {
    const r = await relay.run(cmd, opts);
    if (r.code !== 0) throw new Error(`guest command failed (${r.code}): ${typeof cmd === 'string' ? cmd : cmd.join(' ')}\n${r.stdout}${r.stderr}`);
    return r;
  },
};

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as ChildJob;
  const handler = createResidualMultipathCleanup({
    host: guestHost(relay, { snapshots: 0, commands: 0 }, spec.stateDir),
    stateDir: spec.stateDir,
    attached: new InMemoryAttachedVolumes({}),
    policy: spec.policy,
  });
  const job: ResidualMultipathJob = {
    version: 1,
    key: spec.key,
    runbook: 'residual-multipath-cleanup',
    target: { node: 'lab-node' },
    evidence: [{ source: 'api', summary: 'lab', raw: {} }],
  };
  const ctx = {
    jobId: spec.key,
    attempt: 1,
    mode: 'enforce' as const,
    ranOn: 'lab-node',
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
  };
  // As the node agent runs a job: parked for maturing evidence, it runs again when that can have matured.
  for (let i = 0; ; i++) {
    try {
      const r = await handler(job, ctx);
      send({ t: 'done', outcome: r.outcome, summary: r.summary });
      return;
    } catch (err) {
      if (err instanceof ParkedError && err.parking.reason === 'evidence' && i < 3) {
        await new Promise((r) => setTimeout(r, Math.max(0, (err.parking.until?.getTime() ?? Date.now()) - Date.now()) + 100));
        continue;
      }
      send({ t: 'error', name: err instanceof Error ? err.name : 'Error', message: err instanceof Error ? err.message : String(err) });
      return;
    }
  }
}

await main();
process.disconnect?.();
