import { inClusterRest } from '../../adapters/kube/rest/in-cluster.ts';
import { ensureSecrets } from './ensure.ts';
import { SecretsSpec } from './spec.ts';
import { kubeStore } from './store.ts';

// The chart's pre-install/pre-upgrade hook Job (templates/secrets-job.yaml):
//   node dist/src/control/secrets/main.js      SECRETS_SPEC: the JSON of src/control/secrets/spec.ts
// Makes the Secrets the chart needs that do not exist yet, keeps those that do; one line per
// object on stdout (`kubectl logs job/volume-medic-secrets`), never a secret value. Exits 1 on
// any failure: the install or upgrade then stops before a pod needs what is missing.

async function main(): Promise<void> {
  const raw = process.env['SECRETS_SPEC'];
  if (!raw) throw new Error('SECRETS_SPEC is not set');
  const spec = SecretsSpec.parse(JSON.parse(raw));
  const reports = await ensureSecrets(spec, kubeStore(inClusterRest(), spec.namespace));
  for (const r of reports) process.stdout.write(`${r.outcome} ${r.kind} ${spec.namespace}/${r.name}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`volume-medic secrets: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
