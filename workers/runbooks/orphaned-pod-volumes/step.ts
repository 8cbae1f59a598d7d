import type { PlannedStep } from '../../engine/runbook.ts';

// Each step names one path; none is recursive (docs/decisions/0008 §2.5). `podDir` and `podsDev`
// let execute-step re-check right before the change: the path is still what the plan saw, on
// pods/' file system, and nothing is mounted at or under the pod directory in any namespace.

interface Where {
  uid: string;
  /** Host path of pods/<uid>. */
  podDir: string;
  /** Host path of pods/. */
  podsDir: string;
  /** Relative to podDir ('' for podDir itself). */
  rel: string;
  /** Host path the argv names. */
  path: string;
  /** st_dev of pods/ (decimal). */
  podsDev: string;
}

type S<K extends string, P> = PlannedStep & { kind: K } & Where & P;

export type OrphanStep =
  /** `unlink -- <vol_data.json>`: kubelet's metadata of a CSI volume staged nowhere any more. */
  | S<'unlink-vol-data', { node: string; volume: string; pv: string; stagingPaths: string[] }>
  /** `unlink -- <file>`: etc-hosts, containers/<name>/<id>, plugins/** (files kubelet removes itself). */
  | S<'unlink-kubelet-file', object>
  /** `rmdir -- <dir>`: one empty directory, deepest first, pods/<uid> last. */
  | S<'rmdir', object>;
