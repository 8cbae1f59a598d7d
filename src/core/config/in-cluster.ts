// Whether this process runs in a Kubernetes pod, decided here only: the kubelet sets
// KUBERNETES_SERVICE_HOST in every container. In a pod the API server is reached with the pod's
// service account (src/adapters/kube/rest/in-cluster.ts builds its URL from the same variables);
// elsewhere a kubeconfig is the way, if there is one.

type Env = Readonly<Record<string, string | undefined>>;

export const inCluster = (env: Env = process.env): boolean => Boolean(env['KUBERNETES_SERVICE_HOST']);

/** In a pod, or with a kubeconfig named (KUBECONFIG): a way to the API server is configured. */
export const kubeAccessConfigured = (env: Env = process.env): boolean => inCluster(env) || Boolean(env['KUBECONFIG']);
