import type { CommandRecord } from '../../src/core/catalogue/result.ts';
import { type KubeWrites, kubeWriteArgv } from './kube-writes.ts';

// The Kubernetes twin of workers/host/audit-host.ts: every write becomes a CommandRecord in the
// job's result (argv `kube:<call> ...`, exit 0 for success, the HTTP status in stderr on
// failure). With `simulate` nothing is sent: the record has exit code null, as a dry-run host's.

export interface AuditKubeWritesOptions {
  simulate: boolean;
  sink: (record: CommandRecord) => void;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function createAuditKubeWrites(inner: KubeWrites, options: AuditKubeWritesOptions): KubeWrites {
  async function write<T>(argv: string[], simulated: T, send: () => Promise<T>): Promise<T> {
    if (options.simulate) {
      options.sink({ argv, exitCode: null, signal: null, timedOut: false, durationMs: 0, stdout: '', stderr: '' });
      return simulated;
    }
    const started = performance.now();
    const record = (exitCode: number, stdout: string, stderr: string): CommandRecord => ({
      argv,
      exitCode,
      signal: null,
      timedOut: false,
      durationMs: Math.round(performance.now() - started),
      stdout,
      stderr,
    });
    try {
      const out = await send();
      options.sink(record(0, typeof out === 'boolean' ? (out ? 'deleted' : 'already gone') : '', ''));
      return out;
    } catch (err) {
      options.sink(record(1, '', message(err).slice(0, 2048)));
      throw err;
    }
  }
  return {
    // Simulated: the pod would be deleted (true), so a simulation goes on as enforce would.
    deletePod: (r) => write(kubeWriteArgv.deletePod(r), true, () => inner.deletePod(r)),
    patchNodeTaints: (r) => write(kubeWriteArgv.patchNodeTaints(r), undefined, () => inner.patchNodeTaints(r)),
    event: (e) => write(kubeWriteArgv.event(e), undefined, () => inner.event(e)),
  };
}

/** The dry-run twin: records what would be written, sends nothing. */
export function createDryRunKubeWrites(inner: KubeWrites, sink: (record: CommandRecord) => void = () => undefined): KubeWrites {
  return createAuditKubeWrites(inner, { simulate: true, sink });
}
