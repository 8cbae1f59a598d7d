import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { z } from '../zod.ts';
import { ConfigError } from './config-error.ts';
import { dedupWindows } from './derived.ts';
import { list } from './env-text.ts';
import { configSchema, sectionsOf, type ConfigOf } from './schema.ts';
import { SECTIONS } from './sections.ts';
import { EVERY_PROCESS, type ConfigProcess, type Section, type Setting, type Settings } from './setting.ts';
import { redactUrl, redactUrlsIn } from './redact-url.ts';

// Configuration is read once at start and validated; a bad value stops the process with a
// message naming the variable, what it expected and what it got. Secrets (tokens) are never
// echoed in those messages. A process reads only its own settings: a bad value in another's does
// not stop it.

export { ConfigError };

type Env = Readonly<Record<string, string | undefined>>;
type Processes<P extends ConfigProcess> = P | readonly P[];

const asList = <P extends ConfigProcess>(p: Processes<P>): readonly P[] => (typeof p === 'string' ? [p] : p);

/** Every setting of every section, by key: the config file may hold any (one file for every process). */
function everySetting(): Map<string, Setting> {
  return new Map((SECTIONS as readonly Section<Settings>[]).flatMap((s) => Object.entries(s.settings)));
}

function readFileConfig(path: string, known: ReadonlyMap<string, Setting>): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_CONFIG: cannot read ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    // Loaded only when a file is named: the agents read their environment alone.
    const { parse: parseYaml } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
    parsed = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path} is not valid YAML/JSON: ${(err as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path} must hold a mapping of settings`);
  const unknown = Object.keys(parsed).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new ConfigError(`VOLUME_MEDIC_CONFIG: ${path}: unknown setting(s) ${unknown.join(', ')}`);
  return parsed as Record<string, unknown>;
}

/**
 * A secret setting read from a file instead (`<NAME>_FILE`, e.g. a mounted Secret: the chart's
 * way), so the secret is in no process environment: not in /proc/<pid>/environ, not in what `env`
 * or a debugger shows, not handed to every dependency through process.env. One of the two, never
 * both. The file's text is the value, less its trailing newline. Returns how a message names it;
 * an error names the variable and the path, never the file's text.
 */
function readSecretFile(env: Env, key: string, s: Setting & { fromFile: string }, raw: Record<string, unknown>): string | undefined {
  const path = env[s.fromFile];
  if (path === undefined || path === '') return undefined;
  if (env[s.env] !== undefined && env[s.env] !== '') throw new ConfigError(`${s.fromFile}: ${s.env} is set too; set one of them`);
  try {
    raw[key] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new ConfigError(`${s.fromFile}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  return `${s.env} (from ${s.fromFile} ${path})`;
}

function readTokenFile(path: string): string[] {
  try {
    return list(readFileSync(path, 'utf8').replace(/\n/g, ','));
  } catch (err) {
    throw new ConfigError(`VOLUME_MEDIC_TOKEN_FILE: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** What a message calls each setting: its variable, or the file it was read from. */
type Names = Map<string, string>;

/** The raw values of the settings `processes` read: the config file's, then the environment's over them. */
function rawSettings(processes: readonly ConfigProcess[], env: Env): { raw: Record<string, unknown>; names: Names } {
  const every = everySetting();
  const raw: Record<string, unknown> = env['VOLUME_MEDIC_CONFIG'] ? readFileConfig(env['VOLUME_MEDIC_CONFIG'], every) : {};
  const names: Names = new Map();
  const mine = sectionsOf(processes).flatMap((s) => s.settings);
  for (const [key, s] of mine) {
    names.set(key, s.env);
    const v = env[s.env];
    if (v !== undefined && v !== '') raw[key] = s.read ? s.read(v) : v;
  }
  for (const [key, s] of mine) {
    const from = s.fromFile ? readSecretFile(env, key, { ...s, fromFile: s.fromFile }, raw) : undefined;
    if (from) names.set(key, from);
  }
  if (env['VOLUME_MEDIC_TOKEN_FILE'] && names.has('tokens')) {
    raw['tokens'] = [...((raw['tokens'] as string[] | undefined) ?? []), ...readTokenFile(env['VOLUME_MEDIC_TOKEN_FILE'])];
  }
  return { raw, names };
}

/**
 * The configuration of `processes` (one, or several run as one: `npm start`) from settings by
 * key (the config file's form): each parsed by its declaration, checked with its section's rules,
 * and the derived values added. A bad value is a ConfigError naming the setting.
 */
export const parseConfig = <P extends ConfigProcess>(processes: Processes<P>, raw: Readonly<Record<string, unknown>>): ConfigOf<P> =>
  configParser(processes)(raw);

/** parseConfig with the schema built once, for callers that make many configurations (tests). */
export function configParser<P extends ConfigProcess>(
  processes: Processes<P>,
): (raw: Readonly<Record<string, unknown>>, names?: ReadonlyMap<string, string>) => ConfigOf<P> {
  const ps = asList(processes);
  const schema = configSchema(ps);
  const parts = sectionsOf(ps);
  return (raw, names) => {
    const result = schema.safeParse(raw);
    if (!result.success) throw new ConfigError(`invalid configuration:\n${describe(result.error, raw, names ?? envNames(ps))}`);
    const values = result.data as Record<string, unknown>;
    for (const { section } of parts) section.verify?.(values);
    return { ...values, dedupWindowMs: dedupWindows(values['dedupWindowSeconds'] as number | undefined) } as ConfigOf<P>;
  };
}

/** The configuration of `processes` from the environment and VOLUME_MEDIC_CONFIG. */
export function loadConfig<P extends ConfigProcess>(processes: Processes<P>, env: Env = process.env): ConfigOf<P> {
  const ps = asList(processes);
  const { raw, names } = rawSettings(ps, env);
  return configParser(ps)(raw, names);
}

/** Every process's configuration: tests and tools that stand in for all of them. */
export const loadEveryConfig = (env: Env = process.env): ConfigOf<ConfigProcess> => loadConfig(EVERY_PROCESS, env);

/** Every variable the configuration reads: the settings', their `_FILE` forms, VOLUME_MEDIC_CONFIG and VOLUME_MEDIC_TOKEN_FILE. */
export function configVariables(): Set<string> {
  const settings = [...everySetting().values()];
  return new Set([
    'VOLUME_MEDIC_CONFIG',
    'VOLUME_MEDIC_TOKEN_FILE',
    ...settings.map((s) => s.env),
    ...settings.flatMap((s) => (s.fromFile ? [s.fromFile] : [])),
  ]);
}

const envNames = (processes: readonly ConfigProcess[]): Names =>
  new Map(sectionsOf(processes).flatMap((s) => s.settings.map(([key, setting]): [string, string] => [key, setting.env])));

function describe(error: z.core.$ZodError, raw: Readonly<Record<string, unknown>>, names: ReadonlyMap<string, string>): string {
  const secret = new Set([...everySetting()].filter(([, s]) => s.secret).map(([key]) => key));
  return error.issues
    .map((issue) => {
      const key = String(issue.path[0] ?? '');
      const name = names.get(key) ?? key;
      // A URL may carry a password (REDIS_URL): shown with its userinfo hidden, malformed or not.
      const value = raw[key];
      const shown = typeof value === 'string' && value.includes('@') ? redactUrl(value) : value;
      const got = secret.has(key) || !(key in raw) ? '' : ` (got ${redactUrlsIn(JSON.stringify(shown))})`;
      return `  ${name}: ${issue.message}${got}`;
    })
    .join('\n');
}

/** The mode a runbook runs in under this configuration. */
export function modeOf(
  config: { defaultMode: 'dry-run' | 'enforce'; runbookModes: Partial<Record<string, 'dry-run' | 'enforce'>> },
  runbook: string,
): 'dry-run' | 'enforce' {
  return config.runbookModes[runbook] ?? config.defaultMode;
}
