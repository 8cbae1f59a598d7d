import { z } from '../../zod.ts';
import { NodeName } from '../../catalogue/names.ts';
import { flag, labels, list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Count } from '../types.ts';

const NODE_AGENT = ['node-agent'] as const;

export const nodeAgent = section({
  title: 'Node agent',
  doc: "The agent on each node (a DaemonSet pod): the node it serves, how it reaches the host, and the node-side runbooks' interlocks.",
  settings: {
    nodeName: setting({
      env: 'NODE_NAME',
      readers: NODE_AGENT,
      type: () => z.optional(NodeName),
      doc: 'The node a node agent serves (required; in a DaemonSet it comes from spec.nodeName).',
    }),
    hostRoot: setting({
      env: 'HOST_ROOT',
      readers: NODE_AGENT,
      type: () => z._default(z.string(), '/'),
      doc: "Where the host's / is visible to the node agent (`/host` in a DaemonSet pod).",
    }),
    hostNsenter: setting({
      env: 'HOST_NSENTER',
      readers: NODE_AGENT,
      type: () => z._default(z.boolean(), false),
      read: flag,
      doc: 'Run host commands through `nsenter -t 1 -m -n --` (node agent in a privileged container with hostPID).',
    }),
    removeHostStateOnUninstall: setting({
      env: 'REMOVE_HOST_STATE_ON_UNINSTALL',
      readers: NODE_AGENT,
      type: () => z._default(z.boolean(), false),
      read: flag,
      doc: "Remove STATE_DIR from the host when the agent stops for an uninstall (the chart's pre-delete check marked the node's queue; a rolling update does not), and only with no placeholder, intent record or open journal in it; otherwise it stays and the agent says why (docs/uninstall.md).",
    }),
    nodeLabels: setting({
      env: 'NODE_LABELS',
      readers: NODE_AGENT,
      type: () => z.optional(z.record(z.string(), z.string())),
      read: labels,
      doc: "The node's labels (k=v,...) when the agent runs without cluster access (npm start, tests).",
    }),
    placeholderCheckSeconds: setting({
      env: 'PLACEHOLDER_CHECK_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 300),
      doc: "How often the agent looks whether the disk of one of its Local PV placeholders came back (sysfs), and if so asks for the placeholder's release (verified like any detector's release). It also looks at start. 0: at start only.",
    }),
    placeholderOptInLabel: setting({
      env: 'PLACEHOLDER_OPT_IN_LABEL',
      readers: NODE_AGENT,
      type: () =>
        z._default(
          z.string().check(z.regex(/^[A-Za-z0-9./_-]{1,316}=[A-Za-z0-9._-]{0,63}$/, 'expected <label key>=<value>')),
          'volume-medic.io/local-pv-placeholder=enabled',
        ),
      doc: 'Node label (key=value) that allows Local PV placeholders on a node.',
    }),
    residualMaxMapsPerJob: setting({
      env: 'RESIDUAL_MAX_MAPS_PER_JOB',
      readers: NODE_AGENT,
      type: () => z._default(Count(1), 8),
      doc: 'More residual maps than this in one job: refuse and ask a human.',
    }),
    residualReleaseQueuedIo: setting({
      env: 'RESIDUAL_RELEASE_QUEUED_IO',
      readers: NODE_AGENT,
      type: () => z._default(z.enum(['auto', 'require-approval']), 'auto'),
      doc: "`auto` releases a dead map's queued I/O (fail_if_no_path) after every other interlock passed; `require-approval` leaves it.",
    }),
    residualAttachmentsUnknown: setting({
      env: 'RESIDUAL_ATTACHMENTS_UNKNOWN',
      readers: NODE_AGENT,
      type: () => z._default(z.enum(['proceed', 'refuse']), 'refuse'),
      doc: "When the node's VolumeAttachments cannot be known: `refuse` (unknown means refuse), or `proceed` on the other interlocks (an explicit operator choice, named as such in every step's evidence).",
    }),
    residualAllDeadGraceSeconds: setting({
      env: 'RESIDUAL_ALL_DEAD_GRACE_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 120),
      doc: "A map's queued I/O is released only after every path has been dead this long over at least two observations (or across a reboot).",
    }),
    residualVictimOpeners: setting({
      env: 'RESIDUAL_VICTIM_OPENERS',
      readers: NODE_AGENT,
      type: () => z._default(z.array(z.string().check(z.regex(/^[^\s,]{1,15}$/, 'a process name (comm) of at most 15 characters'))), []),
      read: list,
      doc: 'Process names (comm) the operator adds to the known victims of dead paths (udev workers, blkid, lsblk, multipath tools, ...): openers that may be released.',
    }),
    residualProbeTimeoutMs: setting({
      env: 'RESIDUAL_PROBE_TIMEOUT_MS',
      readers: NODE_AGENT,
      type: () => z._default(z.coerce.number().check(z.int(), z.positive()), 10_000),
      doc: 'Hard deadline of the read probe of a map (probes run in parallel).',
    }),
    rbdForceUnmap: setting({
      env: 'RBD_FORCE_UNMAP',
      readers: NODE_AGENT,
      type: () => z._default(z.enum(['never', 'no-live-workload']), 'never'),
      doc: '`rbd unmap -o force` when a plain unmap stays busy: `never`, or `no-live-workload`.',
    }),
    readonlyScanSeconds: setting({
      env: 'READONLY_SCAN_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 60),
      doc: 'How often the agent reads /proc/1/mountinfo for a kubelet PV mount whose file system the kernel stopped (mount options rw, super options ro or emergency_ro) and asks for a readonly-filesystem-recovery job. 0: never.',
    }),
    readonlyPathsBackSeconds: setting({
      env: 'READONLY_PATHS_BACK_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 120),
      doc: 'A pod on a stopped file system is deleted only after its device has been healthy again (every multipath path active, a direct read answering) this long, over at least two observations.',
    }),
    readonlyVerifySeconds: setting({
      env: 'READONLY_VERIFY_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(1), 300),
      doc: "How long readonly-filesystem-recovery's verify waits for kubelet to unstage the stopped file system and for its next mount to come back rw and clean.",
    }),
    kubeletRootDir: setting({
      env: 'KUBELET_ROOT_DIR',
      readers: NODE_AGENT,
      type: () => z._default(z.string().check(z.regex(/^\/[A-Za-z0-9._/-]*$/)), '/var/lib/kubelet'),
      doc: "kubelet's --root-dir on the nodes (stale kubelet mounts live under it; orphaned-pod-volumes scans its pods/).",
    }),
    orphanScanSeconds: setting({
      env: 'ORPHAN_SCAN_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 300),
      doc: "How often the agent scans kubelet's pods/ for directories of pods that neither the API server nor the container runtime knows (orphaned-pod-volumes). It also scans at start. 0: no scan (kubelet's log line, through NPD, still triggers jobs).",
    }),
    orphanMinAgeSeconds: setting({
      env: 'ORPHAN_MIN_AGE_SECONDS',
      readers: NODE_AGENT,
      type: () => z._default(Count(0), 600),
      doc: 'An orphaned pod directory is cleaned only once seen in two looks at least this far apart (a pod being torn down looks like an orphan for a moment).',
    }),
  },
});
