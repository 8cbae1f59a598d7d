import { z } from '../../zod.ts';
import { section, setting } from '../setting.ts';
import { Count, Flag } from '../types.ts';

const RECEIVER = ['receiver'] as const;

export const receiverRecords = section({
  title: 'Receiver: remediation records',
  doc: 'One VolumeRemediation object per job in the release namespace (docs/console.md, "Remediation records"), kept by the receiver that leads the Lease.',
  settings: {
    records: setting({
      env: 'RECORDS',
      readers: RECEIVER,
      type: () => z._default(Flag, true),
      doc: "Keep a VolumeRemediation (volume-medic.io/v1alpha1) per job, so `kubectl get volumeremediations` shows what the console shows; only with Kubernetes access (in a pod, or KUBE_WATCH), and by the receiver that leads the fleet-metrics Lease. The chart installs the CRD and the receiver's Role on it (values records.enabled).",
    }),
    recordRetentionHours: setting({
      env: 'RECORD_RETENTION_HOURS',
      readers: RECEIVER,
      type: () => z._default(Count(1), 168),
      doc: "How long a job's record stays after the job finished (Redis keeps the job itself for the deduplication window only).",
    }),
    recordSyncSeconds: setting({
      env: 'RECORD_SYNC_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Count(1), 10),
      doc: "How often the records are brought in step with the jobs: a job's record lags its state by up to this.",
    }),
    consoleUrl: setting({
      env: 'CONSOLE_URL',
      readers: RECEIVER,
      type: () => z.optional(z.url({ protocol: /^https?$/ })),
      doc: "The console's external URL (https://volume-medic.example.com): a record's status.consoleURL links to the job's page under it. Unset: records carry no link.",
    }),
  },
});
