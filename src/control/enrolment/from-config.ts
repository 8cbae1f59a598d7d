import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { kubeAccessReviews } from '../auth/access-reviews.ts';
import { ConfigError } from '../../core/config/load.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { loadKubeConfig } from '../../adapters/kube/kube-config.ts';
import { KubeConfigError } from '../../adapters/kube/config-error.ts';
import type { Keyring } from '../../core/trust/keyring.ts';
import type { GenerationTable } from '../../core/trust/key-generations.ts';
import { Enrolment, type CredentialGenerations, type NodeDirectory, type NodeRedisUserPort, type QueueRegistryPort } from './enrolment.ts';
import { TokenIdentities, type TokenIdentityPorts } from './token-identity.ts';

// The receiver's enrolment from its configuration: on when ENROL_NODE_AGENTS or
// ENROL_CLUSTER_WORKERS names a service account; it then needs the API server (TokenReview, and
// the pod when a token carries no node claim) and fails the start without one.

/** The ports TokenIdentities needs, through the API server at `kc`. */
function kubeTokenIdentityPorts(kc: KubeConfig, audience: string): TokenIdentityPorts {
  const reviews = kubeAccessReviews(kc, [audience]);
  const core = kc.makeApiClient(CoreV1Api);
  return {
    reviewToken: (token) => reviews.reviewToken(token),
    podOf: async (namespace, name) => {
      try {
        const pod = await core.readNamespacedPod({ namespace, name });
        return { ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}), ...(pod.spec?.nodeName ? { nodeName: pod.spec.nodeName } : {}) };
      } catch (err) {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      }
    },
  };
}

/** The Nodes through the API server at `kc` (the receiver's `get nodes`, which triage's lookups use too). */
function kubeNodeDirectory(kc: KubeConfig): NodeDirectory {
  const core = kc.makeApiClient(CoreV1Api);
  return {
    uidOf: async (name) => {
      try {
        return (await core.readNode({ name })).metadata?.uid ?? undefined;
      } catch (err) {
        if ((err as { code?: number }).code === 404) return undefined;
        throw err;
      }
    },
  };
}

type EnrolSettings = Pick<ReceiverConfig, 'enrolNodeAgents' | 'enrolClusterWorkers' | 'enrolAudience'>;

export function enrolmentFromConfig(
  config: EnrolSettings,
  roots: Keyring,
  kc: KubeConfig | undefined,
  ports: { generations: CredentialGenerations; table?: GenerationTable; registry?: QueueRegistryPort; redisUsers?: NodeRedisUserPort },
): Enrolment | undefined {
  if (config.enrolNodeAgents.length === 0 && config.enrolClusterWorkers.length === 0) return undefined;
  let access = kc;
  if (!access) {
    try {
      access = loadKubeConfig();
    } catch (err) {
      if (err instanceof KubeConfigError)
        throw new ConfigError(`ENROL_NODE_AGENTS/ENROL_CLUSTER_WORKERS need the API server to review enrolment tokens: ${err.message}`);
      throw err;
    }
  }
  const identities = new TokenIdentities({
    ports: kubeTokenIdentityPorts(access, config.enrolAudience),
    nodeAgents: config.enrolNodeAgents,
    clusterWorkers: config.enrolClusterWorkers,
  });
  return new Enrolment({ roots, identities, nodes: kubeNodeDirectory(access), ...ports });
}
