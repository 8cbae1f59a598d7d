import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEPLOY_DIR, type KObject } from '../../../scripts/deploy/kustomize.ts';

// Shared by the deploy tests: where the manifests are, kubectl when this machine has it.

export { DEPLOY_DIR };

/** `kubectl kustomize <dir>` as objects, or undefined when kubectl is not installed. */
export function kubectlKustomize(dir: string): KObject[] | undefined {
  if (!hasKubectl()) return undefined;
  const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseAllDocuments(out).map((d) => d.toJS() as KObject).filter((o) => o !== null);
}

let kubectl: boolean | undefined;
export function hasKubectl(): boolean {
  if (kubectl === undefined) {
    try {
      execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
      kubectl = true;
    } catch {
      kubectl = false;
    }
  }
  return kubectl;
}

/** Every .yaml file under deploy/base and deploy/components that is not a kustomization. */
export function plainManifestFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(name) && !/^kustomization\.ya?ml$/.test(name)) out.push(p);
    }
  };
  walk(join(DEPLOY_DIR, 'base'));
  walk(join(DEPLOY_DIR, 'components'));
  return out;
}

type Container = { name: string; image?: string; command?: string[]; env?: { name: string; value?: string; valueFrom?: unknown }[]; envFrom?: { configMapRef?: { name: string } }[]; resources?: { requests?: Record<string, string>; limits?: Record<string, string> }; securityContext?: Record<string, unknown>; livenessProbe?: { httpGet?: { path: string } }; readinessProbe?: { httpGet?: { path: string } }; volumeMounts?: { name: string; mountPath: string }[] };
export type PodSpec = { containers: Container[]; hostPID?: boolean; hostNetwork?: boolean; serviceAccountName?: string; nodeSelector?: Record<string, string>; tolerations?: unknown[]; volumes?: { name: string; hostPath?: { path: string }; secret?: { secretName: string; optional?: boolean } }[] };

export function podSpec(o: KObject): PodSpec | undefined {
  const spec = o['spec'] as { template?: { spec?: PodSpec } } | undefined;
  return spec?.template?.spec;
}

export function find(objects: readonly KObject[], kind: string, name: string): KObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind}/${name} is not rendered`);
  return o;
}
