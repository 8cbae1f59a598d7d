import type { NodeAgentConfig } from '../../src/core/config/schema.ts';
import type { Logger } from '../../src/adapters/observability/logger.ts';
import { createRealHost } from '../host/real-host.ts';
import { createLocalPvPlaceholder } from '../runbooks/local-pv-placeholder/handler.ts';
import { InMemoryNodeLabels } from '../runbooks/local-pv-placeholder/node-labels.ts';
import { createResidualMultipathCleanup } from '../runbooks/residual-multipath-cleanup/handler.ts';
import { DEFAULT_VICTIM_OPENERS } from '../runbooks/residual-multipath-cleanup/policy.ts';
import { InMemoryAttachedVolumes } from '../runbooks/residual-multipath-cleanup/attached-volumes.ts';
import { createRbdUnmap } from '../runbooks/rbd-unmap/handler.ts';
import { createOrphanedPodVolumes } from '../runbooks/orphaned-pod-volumes/handler.ts';
import { UnknownOrphanKube } from '../runbooks/orphaned-pod-volumes/orphan-kube.ts';
import { createReadonlyFilesystemRecovery } from '../runbooks/readonly-filesystem-recovery/handler.ts';
import type { RunbookHandler } from '../engine/registry.ts';
import type { NodeRunbookName } from './node-runbooks.ts';
import { type NodeRegistryDeps, UnknownNodePods } from './node-kube.ts';

// The runbooks this node agent carries. A runbook missing here makes its jobs fail visibly as
// `not implemented` (see engine/runbook-worker.ts), never succeed silently. main.ts imports this
// module on the first job (engine/lazy-registry.ts), under the names of node-runbooks.ts.

function optInLabel(config: Pick<NodeAgentConfig, 'placeholderOptInLabel'>): { key: string; value: string } {
  const i = config.placeholderOptInLabel.indexOf('=');
  return { key: config.placeholderOptInLabel.slice(0, i), value: config.placeholderOptInLabel.slice(i + 1) };
}

export function defaultNodeRegistry(config: NodeAgentConfig, _log: Logger, deps: NodeRegistryDeps = {}): { [R in NodeRunbookName]: RunbookHandler<R> } {
  const host = createRealHost({ root: config.hostRoot, nsenter: config.hostNsenter });
  const nodeLabels = deps.nodeLabels ?? new InMemoryNodeLabels(config.nodeName && config.nodeLabels ? { [config.nodeName]: config.nodeLabels } : {});
  return {
    'local-pv-placeholder': createLocalPvPlaceholder({ host, stateDir: config.stateDir, nodeLabels, optInLabel: optInLabel(config) }),
    'residual-multipath-cleanup': createResidualMultipathCleanup({
      host,
      stateDir: config.stateDir,
      attached: deps.attachedVolumes ?? new InMemoryAttachedVolumes({}, { known: false }),
      policy: {
        maxMapsPerJob: config.residualMaxMapsPerJob,
        releaseQueuedIo: config.residualReleaseQueuedIo,
        attachmentsUnknown: config.residualAttachmentsUnknown,
        probeTimeoutMs: config.residualProbeTimeoutMs,
        allDeadGraceMs: config.residualAllDeadGraceSeconds * 1000,
        victimOpeners: [...DEFAULT_VICTIM_OPENERS, ...config.residualVictimOpeners],
      },
    }),
    'rbd-unmap': createRbdUnmap({
      host,
      stateDir: config.stateDir,
      pods: deps.nodePods ?? new UnknownNodePods(),
      policy: { force: config.rbdForceUnmap, kubeletRoot: config.kubeletRootDir },
    }),
    'orphaned-pod-volumes': createOrphanedPodVolumes({
      host,
      stateDir: config.stateDir,
      kube: deps.orphanKube ?? new UnknownOrphanKube(),
      policy: { kubeletRoot: config.kubeletRootDir, minAgeMs: config.orphanMinAgeSeconds * 1000 },
    }),
    'readonly-filesystem-recovery': createReadonlyFilesystemRecovery({
      host,
      ...(deps.kube ? { kube: deps.kube } : {}),
      lookups: deps.recoveryLookups,
      stateDir: config.stateDir,
      policy: {
        kubeletRoot: config.kubeletRootDir,
        pathsBackMs: config.readonlyPathsBackSeconds * 1000,
        verifyMs: config.readonlyVerifySeconds * 1000,
        probeTimeoutMs: config.residualProbeTimeoutMs,
      },
    }),
  };
}
