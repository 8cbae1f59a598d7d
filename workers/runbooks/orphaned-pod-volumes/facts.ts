import type { TreeEntry } from './pod-tree.ts';

// What observe() saw, each fact with its source (docs/decisions/0008 §2.3). Plain data: the plan
// is a pure function of it and the job's result carries it. `known: false` is "could not be
// told", which the plan turns into a refusal, never into "absent".

export type Known<T> = { known: true; value: T } | { known: false; why: string };

/** A mount in some mount namespace at or under a pod directory, or whose source lies under it. */
export interface TreeMount {
  namespace: string;
  host: boolean;
  /** Processes in that namespace (a few), with their names and pods. */
  pids: Array<{ pid: number; comm: string; podUid: string | null }>;
  mountPoint: string;
  root: string;
  majorMinor: string;
  /** `at-or-under`: the mount point is in the tree; `source-under`: a bind *of* the tree held elsewhere. */
  how: 'at-or-under' | 'source-under';
}

export interface PathHolder {
  pid: number;
  comm: string;
  /** cwd, root or fd/<n>. */
  link: string;
  target: string;
}

export interface VolData {
  /** The volume's directory name under volumes/kubernetes.io~csi/ (the PV name, or an inline volume's). */
  volume: string;
  rel: string;
  size: number;
  parsed: { specVolID: string; volumeHandle: string; driverName: string; nodeName: string } | null;
  problem?: string;
  /** Mounts at the volume's staging paths (globalmount) in any namespace; null when vol_data could not be read. */
  stagedAt: string[] | null;
}

export interface UidFacts {
  uid: string;
  /** Host path of pods/<uid>. */
  dir: string;
  tree: Known<TreeEntry[]>;
  /** The pod's namespace/name when the API server knows the UID. */
  apiPod: Known<string | null>;
  /** The runtime knows a sandbox of this UID. */
  inRuntime: Known<boolean>;
  mounts: TreeMount[];
  holders: PathHolder[];
  /** /dev/loopN whose backing file is under the tree. */
  loops: string[];
  volData: VolData[];
  /** This agent's sightings of the UID as an orphan (the scan's and the jobs'). */
  sighting: { since: string; samples: number } | null;
}

export interface OrphanFacts {
  node: string;
  ranOn: string;
  observedAt: string;
  kubeletRoot: string;
  podsDir: string;
  /** st_dev of pods/ (`stat %d`); unknown when pods/ does not exist or is not a directory. */
  podsDev: Known<string>;
  kubeletActive: Known<boolean>;
  /** The PVs named by VolumeAttachments of this node. */
  attachedPvs: Known<string[]>;
  /** pids whose mountinfo could not be read: the mount scan is incomplete without them. */
  unreadableMountinfo: number[];
  /** The job named one UID (absent: every directory in pods/). */
  requestedUid?: string;
  candidates: UidFacts[];
  minAgeMs: number;
}
