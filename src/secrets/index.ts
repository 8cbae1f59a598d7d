export { ensureSecrets, randomAlnum, type Outcome, type Report } from './ensure.ts';
export { SecretItem, SecretsSpec } from './spec.ts';
export { kubeStore, type Kind, type KubeObject, type ObjectStore } from './store.ts';
export { renderRedisAcl } from './redis-acl.ts';
export { certificate, ecKey, serverCertificate } from './x509.ts';
