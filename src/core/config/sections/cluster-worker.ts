import { z } from '../../zod.ts';
import { list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Cidrs, Count } from '../types.ts';

const CLUSTER_WORKER = ['cluster-worker'] as const;

export const clusterWorker = section({
  title: 'Cluster worker',
  doc: 'The singleton that runs cluster-side runbooks (where the Ceph credentials are) and watches for jobs no agent serves.',
  settings: {
    noAgentDeadlineSeconds: setting({
      env: 'NO_AGENT_DEADLINE_SECONDS',
      readers: CLUSTER_WORKER,
      type: () => z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(7 * 86_400)), 900),
      doc: 'A job waiting on a node queue that no node agent serves fails (with a reason naming the missing agent) once it has waited this long; before that it is reported (volume_medic_jobs_without_agent, a warning, a `NoAgent` Event on the Node) after a grace of max(60 s, 2 x LOCK_DURATION_MS + 30 s). 0: report only, never fail.',
    }),
    cephConf: setting({
      env: 'CEPH_CONF',
      readers: CLUSTER_WORKER,
      type: () => z.optional(z.string()),
      doc: "Path of ceph.conf (Ceph's default search when unset). Never logged.",
    }),
    cephKeyring: setting({
      env: 'CEPH_KEYRING',
      readers: CLUSTER_WORKER,
      type: () => z.optional(z.string()),
      doc: "Path of the keyring (Ceph's default when unset). Never logged.",
    }),
    cephId: setting({
      env: 'CEPH_ID',
      readers: CLUSTER_WORKER,
      type: () => z.optional(z.string().check(z.regex(/^[A-Za-z0-9._-]{1,64}$/))),
      doc: 'Ceph client id without `client.` (`admin` when unset).',
    }),
    rbdFencing: setting({
      env: 'RBD_FENCING',
      readers: CLUSTER_WORKER,
      type: () => z._default(z.enum(['off', 'approval', 'on']), 'approval'),
      doc: 'Fence a watcher whose node is gone with `ceph osd blocklist add`: `off`, `approval` (refuse: needs approval), `on`.',
    }),
    rbdBlocklistExpirySeconds: setting({
      env: 'RBD_BLOCKLIST_EXPIRY_SECONDS',
      readers: CLUSTER_WORKER,
      type: () => z._default(z.coerce.number().check(z.int(), z.positive()), 3600),
      doc: 'How long a blocklist entry lasts.',
    }),
    rbdFenceNotReadySeconds: setting({
      env: 'RBD_FENCE_NOT_READY_SECONDS',
      readers: CLUSTER_WORKER,
      type: () => z._default(Count(0), 300),
      doc: "A watcher's node must have been NotReady (Ready False or Unknown, by its condition's lastTransitionTime) this long before its client is fenced; until then the job waits. A node with the `node.kubernetes.io/out-of-service` taint is fenced at once.",
    }),
    rbdFenceCidrs: setting({
      env: 'RBD_FENCE_CIDRS',
      readers: CLUSTER_WORKER,
      type: () => z._default(Cidrs('192.0.2.0/24 or 2001:db8::/32'), []),
      read: list,
      doc: 'Networks whose watchers may be fenced though no Node lists their address (e.g. a known external client network), comma-separated IPv4/IPv6 CIDRs. None: a watcher at an address no Node has is never fenced.',
    }),
    rbdHandoffVerifySeconds: setting({
      env: 'RBD_HANDOFF_VERIFY_SECONDS',
      readers: CLUSTER_WORKER,
      type: () => z._default(z.coerce.number().check(z.int(), z.nonnegative()), 120),
      doc: "After handing the unmap to the watcher's node, how long the cluster half waits for that node's watch to leave the image before it fails (and is retried). 0: only check the hand-over.",
    }),
    oosReadyGraceSeconds: setting({
      env: 'OOS_READY_GRACE_SECONDS',
      readers: CLUSTER_WORKER,
      type: () => z._default(Count(0), 600),
      doc: "out-of-service-taint-release: a node must have been Ready this long (its Ready condition's lastTransitionTime) before its `node.kubernetes.io/out-of-service` taint is removed; until then the job waits (docs/decisions/0008 §4.3).",
    }),
  },
});
