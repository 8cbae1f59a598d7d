import type { z } from '../zod.ts';

// What one setting is, as data: its key (camelCase, the config file's name), its environment
// variable, its type with its default, what it means and which processes read it. A process
// parses only the settings it reads (load.ts), so a bad value in a receiver-only setting does not
// stop a node agent; docs/configuration.md is generated from these declarations
// (scripts/config-docs.ts).

/** The processes that read configuration. The CLI and the secrets Job take flags and SECRETS_SPEC instead. */
export const EVERY_PROCESS = ['receiver', 'node-agent', 'cluster-worker'] as const;
export type ConfigProcess = (typeof EVERY_PROCESS)[number];
export const AGENTS = ['node-agent', 'cluster-worker'] as const;

export interface Setting<T extends z.ZodMiniType = z.ZodMiniType, R extends ConfigProcess = ConfigProcess> {
  /** The environment variable (UPPER_SNAKE). */
  env: string;
  /** The processes that read it; only they parse it. */
  readers: readonly R[];
  /**
   * Its type, default included (`z._default`), or `z.optional` when unset means something. A
   * function: the schema is built when a process validates its configuration, and not held.
   */
  type: () => T;
  /** What it means (one paragraph; docs/configuration.md shows it). */
  doc: string;
  /** How the variable's text becomes the value the type checks; default: as it is. */
  read?: (text: string) => unknown;
  /** `<ENV>_FILE`: a file holding the value instead (a mounted Secret), so it is in no process environment. */
  fromFile?: string;
  /** Its value never appears in a message. */
  secret?: true;
  /** How the reference shows a default the type cannot say (one computed from other settings). */
  defaultText?: string;
}

/** One setting, its readers kept as a literal type (what ConfigOf filters on). */
export function setting<T extends z.ZodMiniType, const R extends ConfigProcess>(s: Setting<T, R>): Setting<T, R> {
  return s;
}

export type Settings = Readonly<Record<string, Setting>>;

/** The values of some settings, as parsed. */
type ValuesOf<S extends Settings> = { [K in keyof S]: z.output<ReturnType<S[K]['type']>> };

export interface Section<S extends Settings = Settings> {
  /** The reference's heading. */
  title: string;
  /** What the section is about (the reference's paragraph under the heading). */
  doc: string;
  settings: S;
  /**
   * Rules across its settings, on those the process reads (the others are undefined). An issue
   * names the setting it is about; the message names its variable.
   */
  check?(c: Partial<ValuesOf<S>>, issue: (key: keyof S & string, message: string) => void): void;
  /** After parsing: what needs the file system. Throws ConfigError. */
  verify?(c: Partial<ValuesOf<S>>): void;
}

/** One section; its settings' types kept. */
export function section<S extends Settings>(s: Section<S>): Section<S> {
  return s;
}
