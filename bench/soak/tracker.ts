import type { Child } from '../../test/support/child.ts';

// What happened to every job, from the webhooks' answers and the agents' own lines: when its
// webhook was first tried and answered 202, each time an agent started it (RAN), when it finished.

export interface JobTrack {
  node: string;
  queue: string;
  /** Epoch ms of the webhook's first attempt (what Alertmanager's alert waited from). */
  sentAt: number;
  acceptedAt: number;
  /** Epoch ms of each start. */
  ran: number[];
  finishedAt?: number;
  outcome?: 'completed' | 'failed';
  real: boolean;
  /** Statuses of its webhook's attempts before the 202 (0: no answer). */
  before: number[];
}

export class Tracker {
  readonly jobs = new Map<string, JobTrack>();
  /** Starts and ends seen for ids no 202 named (yet): the 202 may arrive after the job started. */
  private readonly early = new Map<string, { ran: number[]; finishedAt?: number; outcome?: 'completed' | 'failed' }>();
  private readonly cursors = new Map<Child, number>();

  accepted(id: string, queue: string, node: string, sentAt: number, acceptedAt: number, before: number[]): void {
    if (this.jobs.has(id)) return;
    const early = this.early.get(id);
    this.early.delete(id);
    this.jobs.set(id, {
      node,
      queue,
      sentAt,
      acceptedAt,
      before,
      ran: early?.ran ?? [],
      real: node.startsWith('soak-real-'),
      ...(early?.finishedAt ? { finishedAt: early.finishedAt, outcome: early.outcome! } : {}),
    });
  }

  private entry(id: string): { ran: number[]; finishedAt?: number; outcome?: 'completed' | 'failed' } {
    const j = this.jobs.get(id);
    if (j) return j;
    let e = this.early.get(id);
    if (!e) this.early.set(id, (e = { ran: [] }));
    return e;
  }

  /** Reads the lines `child` printed since the last call. Fleet: `RAN <node> <id> <ms>`; real: `RAN <id> <ms>`; both `DONE|FAILED [node] <id>`. */
  read(child: Child, kind: 'fleet' | 'real'): void {
    const from = this.cursors.get(child) ?? 0;
    const lines = child.lines;
    for (let k = from; k < lines.length; k++) {
      for (const line of lines[k]!.split('\n')) {
        const f = line.split(' ');
        const [what] = f;
        const id = kind === 'fleet' ? f[2] : f[1];
        if (!id) continue;
        if (what === 'RAN') this.entry(id).ran.push(Number(kind === 'fleet' ? f[3] : f[2]));
        else if (what === 'DONE' || what === 'FAILED') {
          const e = this.entry(id);
          e.finishedAt = Date.now();
          e.outcome = what === 'DONE' ? 'completed' : 'failed';
        }
      }
    }
    this.cursors.set(child, lines.length);
  }

  /** Time from webhook to first start of every started job, with the webhook's send time. */
  startLatencies(filter: (j: JobTrack) => boolean = () => true): { at: number; ms: number }[] {
    const out: { at: number; ms: number }[] = [];
    for (const j of this.jobs.values()) if (j.ran.length > 0 && filter(j)) out.push({ at: j.sentAt, ms: j.ran[0]! - j.sentAt });
    return out.sort((a, b) => a.at - b.at);
  }
}
