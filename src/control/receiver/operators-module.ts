import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../adapters/kube/kube-config.ts';
import { KubeConfigError } from '../../adapters/kube/config-error.ts';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { type AccessReviews, kubeAccessReviews } from '../auth/access-reviews.ts';
import { cachedReviews } from '../auth/cached-reviews.ts';
import { FailedAuthLimiter } from '../auth/failed-auth-limiter.ts';
import { OperatorAuth } from '../auth/operator-auth.ts';

// Who the operators are (OPERATOR_AUTH): Kubernetes TokenReview and SubjectAccessReview with the
// receiver's access, an authenticating proxy, or the trial mode; failed sign-ins limited.

export interface Operators {
  auth: OperatorAuth;
  limiter: FailedAuthLimiter;
  /** The access the reviews use, when they have one (the console reads Events back with it too). */
  access?: KubeConfig;
}

/** TokenReview/SubjectAccessReview access for OPERATOR_AUTH=kubernetes, or why there is none. */
function operatorReviews(config: ReceiverConfig, kc: KubeConfig | undefined): { reviews?: AccessReviews; unavailableReason?: string; access?: KubeConfig } {
  if (config.operatorAuth !== 'kubernetes') return {};
  let access = kc;
  if (!access) {
    try {
      access = loadKubeConfig();
    } catch (err) {
      if (!(err instanceof KubeConfigError)) throw err;
      return { unavailableReason: err.message };
    }
  }
  return {
    access,
    reviews: cachedReviews(kubeAccessReviews(access, config.operatorTokenAudiences), {
      tokenTtlMs: config.operatorTokenCacheSeconds * 1000,
      accessTtlMs: config.operatorAccessCacheSeconds * 1000,
    }),
  };
}

export function operators(config: ReceiverConfig, log: Logger, kc: KubeConfig | undefined): Operators {
  const limiter = new FailedAuthLimiter({ perMinute: config.authFailuresPerMinute });
  const { access, ...reviews } = operatorReviews(config, kc);
  const auth = new OperatorAuth({
    mode: config.operatorAuth,
    ...reviews,
    webhookTokens: config.tokens,
    proxy: { cidrs: config.authProxyCidrs, userHeader: config.authProxyUserHeader, groupsHeader: config.authProxyGroupsHeader },
    limiter,
  });
  if (auth.unavailable && config.operatorAuth === 'kubernetes')
    log.error(
      { why: auth.unavailable },
      'operator routes and the dashboard will answer 503 until this is fixed (OPERATOR_AUTH=off says that no operator access is wanted)',
    );
  return { auth, limiter, ...(access ? { access } : {}) };
}
