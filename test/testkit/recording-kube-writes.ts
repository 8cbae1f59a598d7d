import type { KubeWrites } from '../../workers/kube-writes/kube-writes.ts';

// A Kubernetes write port for tests: every call is recorded (method and request), then answered
// as told, or refused loudly (`throwing`), for the tests that prove a job wrote nothing: a call
// that should never happen fails the step as well as showing up in `calls`.

export type KubeWriteCall =
  | { method: 'deletePod'; request: Parameters<KubeWrites['deletePod']>[0] }
  | { method: 'patchNodeTaints'; request: Parameters<KubeWrites['patchNodeTaints']>[0] }
  | { method: 'event'; request: Parameters<KubeWrites['event']>[0] };

export class RecordingKubeWrites implements KubeWrites {
  readonly calls: KubeWriteCall[] = [];
  /** What deletePod answers (true: deleted, false: already gone). */
  deleted = true;
  /** Thrown by every call after it is recorded. */
  failWith: Error | undefined;

  /** A port that must never be reached: each call is recorded, then throws. */
  static throwing(): RecordingKubeWrites {
    const k = new RecordingKubeWrites();
    k.failWith = new Error('a write reached the Kubernetes API port');
    return k;
  }

  async deletePod(request: Parameters<KubeWrites['deletePod']>[0]): Promise<boolean> {
    this.calls.push({ method: 'deletePod', request });
    if (this.failWith) throw this.failWith;
    return this.deleted;
  }

  async patchNodeTaints(request: Parameters<KubeWrites['patchNodeTaints']>[0]): Promise<void> {
    this.calls.push({ method: 'patchNodeTaints', request });
    if (this.failWith) throw this.failWith;
  }

  async event(request: Parameters<KubeWrites['event']>[0]): Promise<void> {
    this.calls.push({ method: 'event', request });
    if (this.failWith) throw this.failWith;
  }
}
