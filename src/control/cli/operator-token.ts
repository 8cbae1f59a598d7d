import type { KubeConfig } from '@kubernetes/client-node';

// The operator token the CLI sends: --token, else VOLUME_MEDIC_OPERATOR_TOKEN, else what the
// kubeconfig's current context would send to its API server (KUBECONFIG, else ~/.kube/config: a
// token, a token file, an exec plugin or OIDC, via @kubernetes/client-node). The receiver
// checks it with TokenReview, so it is the user's own Kubernetes identity; the webhook token
// (VOLUME_MEDIC_TOKEN) opens no CLI command.

type Env = Readonly<Record<string, string | undefined>>;

export interface TokenSource {
  token?: string;
  /** Where it came from, or why there is none (said when the receiver answers 401). */
  from: string;
}

export async function operatorToken(flag: string | undefined, env: Env): Promise<TokenSource> {
  if (flag) return { token: flag, from: '--token' };
  if (env['VOLUME_MEDIC_OPERATOR_TOKEN']) return { token: env['VOLUME_MEDIC_OPERATOR_TOKEN'].trim(), from: 'VOLUME_MEDIC_OPERATOR_TOKEN' };
  const file = env['KUBECONFIG'] || (env['HOME'] ? `${env['HOME']}/.kube/config` : undefined);
  if (!file) return { from: 'no --token, VOLUME_MEDIC_OPERATOR_TOKEN or kubeconfig' };
  // Loaded only here: client-node costs the CLI about a second to start.
  const { KubeConfig } = await import('@kubernetes/client-node');
  // KUBECONFIG may list several files: the first one with a current context's user counts.
  let kc: KubeConfig | undefined;
  let problem = '';
  for (const f of file.split(':').filter(Boolean)) {
    const candidate = new KubeConfig();
    try {
      candidate.loadFromFile(f);
    } catch (err) {
      problem = (err as NodeJS.ErrnoException).code ?? (err as Error).message.slice(0, 200);
      continue;
    }
    if (candidate.getCurrentUser()) {
      kc = candidate;
      break;
    }
  }
  const user = kc?.getCurrentUser();
  if (!kc || !user)
    return {
      from: `no --token or VOLUME_MEDIC_OPERATOR_TOKEN, and no kubeconfig user (${file}${problem ? `: ${problem}` : ': no current context with a user'})`,
    };
  // Only the user's credentials matter (they go to volume-medic, not to that cluster), and the
  // client refuses to apply them for a plain-http cluster: ask with the user alone.
  const alone = new KubeConfig();
  alone.loadFromOptions({
    clusters: [{ name: 'volume-medic', server: 'https://volume-medic.invalid', skipTLSVerify: false }],
    users: [user],
    contexts: [{ name: 'volume-medic', cluster: 'volume-medic', user: user.name }],
    currentContext: 'volume-medic',
  });
  const opts: { headers?: Record<string, string> } = { headers: {} };
  try {
    await alone.applyToHTTPSOptions(opts);
  } catch (err) {
    return { from: `the kubeconfig user ${user.name} gave no token: ${(err as Error).message.slice(0, 200)}` };
  }
  const token = /^Bearer\s+(\S+)$/i.exec(opts.headers?.['Authorization'] ?? opts.headers?.['authorization'] ?? '')?.[1];
  if (!token)
    return {
      from: `the kubeconfig user ${user.name} has no bearer token (a client certificate cannot be passed on: use --token "$(kubectl create token <service-account>)")`,
    };
  return { token, from: `kubeconfig user ${user.name}` };
}
