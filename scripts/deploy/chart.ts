import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { runTool, type Tool } from './tools.ts';

// The Helm chart (deploy/charts/volume-medic) is the one source of volume-medic's Kubernetes
// objects. This renders it with the project's own helm (scripts/deploy/tools.ts) for the tests,
// the benchmarks and deploy/volume-medic.yaml, the single file for `kubectl apply -f`.

export type KObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
};

export class ChartError extends Error {
  override name = 'ChartError';
}

export const DEPLOY_DIR = resolve(import.meta.dirname, '../../deploy');
export const CHART_DIR = join(DEPLOY_DIR, 'charts/volume-medic');
/** The values sets CI renders (chart-testing's convention: ci/<name>-values.yaml). */
export const CI_VALUES_DIR = join(CHART_DIR, 'ci');
/** `kubectl apply -f` this: the chart rendered with RENDERED_VALUES. */
export const RENDERED_FILE = join(DEPLOY_DIR, 'volume-medic.yaml');
/**
 * The values of RENDERED_FILE: the chart's defaults except what a file committed to a repository
 * cannot hold. It names Secrets the operator makes (a generated token or key in a public file
 * would be the same in every installation), and has no bundled Redis (whose ACL file would need
 * those passwords); it creates the Namespace with its Pod Security label.
 */
export const RENDERED_VALUES = join(DEPLOY_DIR, 'volume-medic.values.yaml');
export const NAMESPACE = 'volume-medic';
export const RELEASE = 'volume-medic';

/** Every YAML document of a text, skipping empty ones; each must be a Kubernetes object. */
export function parseObjects(text: string, what = 'input'): KObject[] {
  const out: KObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new ChartError(`${what}: ${doc.errors[0]?.message}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const o = value as Partial<KObject>;
    if (typeof o !== 'object' || typeof o.apiVersion !== 'string' || typeof o.kind !== 'string' || typeof o.metadata?.name !== 'string') {
      throw new ChartError(`${what}: a document without apiVersion, kind and metadata.name`);
    }
    out.push(o as KObject);
  }
  return out;
}

export const readObjects = (file: string): KObject[] => parseObjects(readFileSync(file, 'utf8'), file);

export interface TemplateOptions {
  /** Values files, in order (later wins). */
  values?: readonly string[];
  /** --set expressions. */
  set?: readonly string[];
  namespace?: string;
  /** Only these templates (e.g. templates/monitoring.yaml). */
  show?: readonly string[];
  /** helm (4, the default) or helm3. */
  helm?: Extract<Tool, 'helm' | 'helm3'>;
  /** Another chart than CHART_DIR: a packaged .tgz, an oci:// reference (with version). */
  chart?: string;
  /** --version of an oci:// or repository chart. */
  version?: string;
  /** More arguments, e.g. --plain-http. */
  extra?: readonly string[];
  /** helm's HOME (its registry logins and cache); default: the tools' private one. */
  home?: string;
}

/** `helm template` of the chart: its text (helm's stderr in the error when it refuses). */
export function helmTemplateText(o: TemplateOptions = {}): string {
  const args = ['template', RELEASE, o.chart ?? CHART_DIR, '--namespace', o.namespace ?? NAMESPACE];
  if (o.version) args.push('--version', o.version);
  for (const f of o.values ?? []) args.push('--values', f);
  for (const s of o.set ?? []) args.push('--set', s);
  for (const s of o.show ?? []) args.push('--show-only', s);
  args.push(...(o.extra ?? []));
  const r = runTool(o.helm ?? 'helm', args, { home: o.home });
  if (r.status !== 0) throw new ChartError(`helm ${args.slice(0, 3).join(' ')} ...: ${r.stderr.trim()}`);
  return r.stdout;
}

export const helmTemplate = (o: TemplateOptions = {}): KObject[] => parseObjects(helmTemplateText(o), 'helm template');

const HEADER = `# volume-medic for \`kubectl apply -f\`: generated from the Helm chart (deploy/charts/volume-medic)
# by \`npm run deploy:render\` with deploy/volume-medic.values.yaml; do not edit (CI fails when it
# is stale). Dry-run; no bundled Redis. Before applying, create the Secrets it names
# (docs/install.md): volume-medic-webhook-token, volume-medic-signing-<role>,
# volume-medic-redis-<process>, volume-medic-receiver-tls, volume-medic-control-signing (and the
# ConfigMap volume-medic-control-certs; deploy/volume-medic.values.yaml says how).
`;

/** What deploy/volume-medic.yaml must hold. */
export function renderedFileText(): string {
  return HEADER + helmTemplateText({ values: [RENDERED_VALUES] });
}

/** The names of the CI values sets (ci/<name>-values.yaml), sorted. */
export const VALUE_SETS: readonly string[] = readdirSync(CI_VALUES_DIR)
  .flatMap((f) => /^(.+)-values\.yaml$/.exec(f)?.[1] ?? [])
  .sort();

/** One CI values set rendered (`static`: deploy/volume-medic.yaml's values). */
export function renderSet(name: string, helm: TemplateOptions['helm'] = 'helm'): KObject[] {
  return helmTemplate({ values: [valuesFile(name)], helm });
}

/** The values file of a CI values set (`static`: deploy/volume-medic.yaml's). */
export const valuesFile = (name: string): string => (name === 'static' ? RENDERED_VALUES : join(CI_VALUES_DIR, `${name}-values.yaml`));
