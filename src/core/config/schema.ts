import { z } from '../zod.ts';
import { SECTIONS, type AllSettings } from './sections.ts';
import type { Derived } from './derived.ts';
import type { ConfigProcess, Section, Setting, Settings } from './setting.ts';

// A process's configuration: the settings it reads (src/core/config/sections/*), as their types
// give them, and the values derived from them (derived.ts). Environment variables (UPPER_SNAKE)
// override the optional config file (VOLUME_MEDIC_CONFIG, YAML or JSON, same names in camelCase);
// docs/configuration.md lists them all, generated from the sections.

type ReadersOf<S> = S extends Setting<z.ZodMiniType, infer R> ? R : never;
type ValueOf<S> = S extends Setting<infer T, ConfigProcess> ? z.output<T> : never;

type ReadBy<P extends ConfigProcess> = {
  [K in keyof AllSettings as [Extract<ReadersOf<AllSettings[K]>, P>] extends [never] ? never : K]: ValueOf<AllSettings[K]>;
};
/** As zod's object gives them: a setting that may be unset is an optional key. */
type Optional<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & { [K in keyof T as undefined extends T[K] ? K : never]?: T[K] };

/** The configuration of a process, or of several run as one (`npm start`). logLevel is named too: every process reads it, and code generic over the process (run-main.ts) needs it. */
export type ConfigOf<P extends ConfigProcess> = Optional<ReadBy<P>> & Derived & { logLevel: ValueOf<AllSettings['logLevel']> };

export type ReceiverConfig = ConfigOf<'receiver'>;
export type NodeAgentConfig = ConfigOf<'node-agent'>;
export type ClusterWorkerConfig = ConfigOf<'cluster-worker'>;
/** What both agents read: what their shared bootstrap (workers/agent-bootstrap) takes. */
export type AgentConfig = Pick<NodeAgentConfig, keyof NodeAgentConfig & keyof ClusterWorkerConfig>;
/** Every setting: what tests build, and what the reference lists. */
export type Config = ConfigOf<ConfigProcess>;

/** Whether any of `processes` reads the setting. */
const readBy = (s: Setting, processes: readonly ConfigProcess[]): boolean => s.readers.some((r) => processes.includes(r));

/** The sections with the settings `processes` read (a section none of them reads is left out). */
export function sectionsOf(processes: readonly ConfigProcess[]): { section: Section; settings: [string, Setting][] }[] {
  return (SECTIONS as readonly Section<Settings>[])
    .map((section) => ({ section, settings: Object.entries(section.settings).filter(([, s]) => readBy(s, processes)) }))
    .filter((s) => s.settings.length > 0);
}

// Built on each call and not held: a process validates its configuration once, at start, and the
// node agent should not keep a schema of its settings for its lifetime (its idle RSS is budgeted
// against a bare BullMQ Worker: bench/README.md, "The agent against its floor"). The declarations
// it keeps are data; each setting's type is built here, and only for the settings it reads.
export function configSchema(processes: readonly ConfigProcess[]) {
  const parts = sectionsOf(processes);
  const shape: Record<string, z.ZodMiniType> = {};
  for (const { settings } of parts) for (const [key, s] of settings) shape[key] = s.type();
  return z.object(shape).check(
    z.superRefine((c, ctx) => {
      for (const { section } of parts)
        section.check?.(c as Partial<Record<string, unknown>>, (key, message) => ctx.addIssue({ code: 'custom', path: [key], message }));
    }),
  );
}
