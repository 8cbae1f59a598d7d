import type { PlannedStep } from '../../engine/runbook.ts';
import type { TaintAsSpec } from './facts.ts';

type S<K extends string, P> = PlannedStep & { kind: K } & P;

export type TaintReleaseStep =
  /** `ceph osd blocklist rm <address>`: only an entry our own `blocklist add` wrote (its undo record). */
  | S<'blocklist-rm', { node: string; address: string; bootIdNow: string; bootIdAtFirstSight?: string }>
  /**
   * A JSON patch of the Node: `test` of resourceVersion and of the taint at `index`, then its
   * `remove`. `otherTaints`: the list as the plan saw it without this one, for verify.
   */
  | S<
      'remove-taint',
      {
        node: string;
        resourceVersion: string;
        index: number;
        taint: TaintAsSpec;
        otherTaints: TaintAsSpec[];
        bootIdNow: string;
        bootIdAtFirstSight?: string;
        cleanupJobs: string[];
        /** Rook's NetworkFence named after the node: removing the taint makes Rook delete it (the Ceph unfence). */
        networkFence?: { cidrs: string[] };
      }
    >;
