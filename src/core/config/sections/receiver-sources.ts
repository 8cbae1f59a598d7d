import { z } from '../../zod.ts';
import { list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Count, Flag } from '../types.ts';

const RECEIVER = ['receiver'] as const;

/** The `source` of deploy/integrations/npd/local-pv-monitor.json and kubelet-orphaned-pod-monitor.json, which NPD writes as source.component. */
export const DEFAULT_NPD_EVENT_SOURCES: readonly string[] = ['local-pv-monitor', 'kubelet-monitor'];

export const receiverSources = section({
  title: 'Receiver: sources and Kubernetes',
  doc: 'What the receiver believes (alerts, node-problem-detector Events) and what it watches in the cluster.',
  settings: {
    nodeRecoveryAlerts: setting({
      env: 'NODE_RECOVERY_ALERTS',
      readers: RECEIVER,
      type: () => z._default(z.array(z.string().check(z.minLength(1))), ['KubeNodeNotReady', 'KubeNodeUnreachable']),
      read: list,
      doc: 'Alert names whose resolution means a node is back.',
    }),
    npdEventSources: setting({
      env: 'NPD_EVENT_SOURCES',
      readers: RECEIVER,
      type: () =>
        z._default(z.array(z.string().check(z.regex(/^[A-Za-z0-9._:-]{1,253}$/, 'a component name: letters, digits, . _ : -'))).check(z.minLength(1)), [
          ...DEFAULT_NPD_EVENT_SOURCES,
        ]),
      read: list,
      doc: "node-problem-detector monitors whose LocalDiskLost and OrphanedPodVolumes Events are believed (NPD writes a monitor config's `source` as the Event's source.component); `local-pv-monitor` and `kubelet-monitor` are the monitors in deploy/integrations/npd. Other reporters: see src/control/sources/event-trust.ts.",
    }),
    npdEventNamespace: setting({
      env: 'NPD_EVENT_NAMESPACE',
      readers: RECEIVER,
      type: () => z._default(z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name')), 'default'),
      doc: 'The namespace NPD writes its Events in (its --event-namespace; `default` when that is unset).',
    }),
    kubeWatch: setting({
      env: 'KUBE_WATCH',
      readers: RECEIVER,
      type: () => z._default(Flag, false),
      doc: "Watch Nodes and Events, reconcile periodically, and answer triage's lookups from the API server. Access: the pod's service account when KUBERNETES_SERVICE_HOST is set, else the kubeconfig (KUBECONFIG, which may list several files, else ~/.kube/config).",
    }),
    nodeHealthCheck: setting({
      env: 'NODE_HEALTHCHECK',
      readers: RECEIVER,
      type: () => z._default(Flag, false),
      doc: "With KUBE_WATCH: watch VolumeMedicRemediation objects (medik8s NodeHealthCheck's External Remediation API, the chart's `nodeHealthCheck.enabled`), make each one's residual-multipath-cleanup job and keep its status the job's (docs/node-healthcheck.md). Needs the chart's CRDs: without them the watch cannot list and the receiver is not ready.",
    }),
    kubeReconcileSeconds: setting({
      env: 'KUBE_RECONCILE_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Count(0), 300),
      doc: 'Period of the reconcile (recently Ready nodes, pods stuck creating); 0: at start only.',
    }),
    fleetMetricsLeaseSeconds: setting({
      env: 'FLEET_METRICS_LEASE_SECONDS',
      readers: RECEIVER,
      type: () =>
        z._default(
          z.coerce.number().check(
            z.int(),
            z.gte(0),
            z.refine((v) => v === 0 || v >= 2, 'expected 0 (no election) or at least 2'),
          ),
          15,
        ),
      doc: 'Receivers with Kubernetes access (KUBE_WATCH, or in a pod) elect one of them on a Lease of this duration; only the leader exports the fleet-wide series (read from Redis) on /metrics, so sums over replicas never double. 0: no election, every receiver exports them (as one without Kubernetes access does).',
    }),
  },
});
