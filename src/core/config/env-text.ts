import { ConfigError } from './config-error.ts';

// How the text of an environment variable becomes the value a setting's type checks. The config
// file (VOLUME_MEDIC_CONFIG) gives values already typed and skips these.

/** `a, b,c` -> ['a', 'b', 'c']: comma-separated, blanks dropped. */
export const list = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** RUNBOOK_MODES: `<runbook>=<mode>,...`. */
export function modes(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list(v)) {
    const [name, mode, ...rest] = pair.split('=').map((s) => s.trim());
    if (!name || !mode || rest.length > 0) throw new ConfigError(`RUNBOOK_MODES: "${pair}" is not <runbook>=<dry-run|enforce>`);
    out[name] = mode;
  }
  return out;
}

/** NODE_LABELS: `<key>=<value>,...`. */
export function labels(v: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of list(v)) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new ConfigError(`NODE_LABELS: "${pair}" is not <key>=<value>`);
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

/** A flag whose type is a plain boolean: true/1 and false/0; anything else is left for the type to refuse. */
export const flag = (v: string): unknown => (v === 'true' || v === '1' ? true : v === 'false' || v === '0' ? false : v);
