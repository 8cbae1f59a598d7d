import { z } from '../../zod.ts';
import { list } from '../env-text.ts';
import { AGENTS, section, setting } from '../setting.ts';
import { Flag } from '../types.ts';

const NamespacedName = z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, '<namespace>/<name>'));
const Namespace = z.string().check(z.regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a namespace name'));

export const coordination = section({
  title: 'Coordination with other tools',
  doc: "What else may be taking a node away: before each destructive step the node agent and the cluster worker ask whether kured holds its reboot lock for the job's node, the node is being drained (cordoned with pods terminating), or a medik8s remediation (SelfNodeRemediation, FenceAgentsRemediation) is active for it; if so, or if that cannot be told, the job waits (parked, reason `coordination`) and looks again (docs/safety.md).",
  settings: {
    coordination: setting({
      env: 'COORDINATION',
      readers: AGENTS,
      type: () => z._default(Flag, true),
      doc: 'Ask before each destructive step whether kured, a drain or medik8s is acting on the node (on/off). Off: no step waits for them.',
    }),
    coordinationRecheckSeconds: setting({
      env: 'COORDINATION_RECHECK_SECONDS',
      readers: AGENTS,
      type: () => z._default(z.coerce.number().check(z.positive()), 30),
      doc: 'How soon a job waiting for another tool on its node looks again.',
    }),
    kuredDaemonSet: setting({
      env: 'KURED_DAEMONSET',
      readers: AGENTS,
      type: () => z._default(NamespacedName, 'kube-system/kured'),
      doc: "kured's DaemonSet (`<namespace>/<name>`, its --ds-namespace and --ds-name), whose annotation holds its reboot lock. Absent (404): kured is not installed.",
    }),
    kuredLockAnnotation: setting({
      env: 'KURED_LOCK_ANNOTATION',
      readers: AGENTS,
      type: () => z._default(z.string().check(z.minLength(1)), 'weave.works/kured-node-lock'),
      doc: 'The annotation kured keeps its lock in (its --lock-annotation).',
    }),
    medik8sNamespaces: setting({
      env: 'MEDIK8S_NAMESPACES',
      readers: AGENTS,
      type: () => z._default(z.array(Namespace), []),
      read: list,
      doc: 'Namespaces where SelfNodeRemediation and FenceAgentsRemediation objects are looked for (comma-separated); empty: every namespace.',
    }),
  },
});
