import { SECTIONS } from '../../src/core/config/sections.ts';
import { EVERY_PROCESS, type ConfigProcess, type Section, type Setting, type Settings } from '../../src/core/config/setting.ts';

// docs/configuration.md, as the settings' declarations (src/core/config/sections/*.ts) give it:
// one table per section, each setting with its variable, type, default, readers and meaning.
// scripts/config-docs.ts writes it, and with --check (npm run lint) fails when the file differs.

export const REFERENCE_PATH = 'docs/configuration.md';

/** What zod keeps of a type: enough to name it for a reader. */
interface Def {
  type: string;
  innerType?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
  options?: ({ _zod: { def: Def } } | string)[];
  entries?: Record<string, string>;
  keyType?: { _zod: { def: Def } };
  format?: string;
}

const defOf = (t: unknown): Def => (t as { _zod: { def: Def } })._zod.def;

function typeText(def: Def): string {
  switch (def.type) {
    case 'default':
    case 'optional':
      return def.innerType ? typeText(def.innerType._zod.def) : def.type;
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'string':
      return def.format === 'url' ? 'URL' : 'text';
    case 'union':
      return (def.options ?? []).some((o) => typeof o !== 'string' && o._zod.def.type === 'boolean') ? 'boolean' : 'one of several';
    case 'enum':
      return Object.values(def.entries ?? {})
        .map((v) => `\`${v}\``)
        .join(', ');
    case 'array':
      return def.element ? `list of ${typeText(def.element._zod.def)}` : 'list';
    case 'record':
      return def.keyType && defOf(def.keyType).type === 'enum' ? '`<runbook>=<mode>,...`' : '`<key>=<value>,...`';
    default:
      return def.type;
  }
}

function defaultText(s: Setting): string {
  if (s.defaultText) return s.defaultText;
  const parsed = s.type().safeParse(undefined);
  const v: unknown = parsed.success ? parsed.data : undefined;
  if (v === undefined) return 'unset';
  if (Array.isArray(v)) return v.length === 0 ? 'none' : `\`${v.join(',')}\``;
  if (typeof v === 'object' && v !== null) return Object.keys(v).length === 0 ? 'none' : `\`${JSON.stringify(v)}\``;
  if (typeof v === 'string') return `\`${v}\``;
  return String(v);
}

const NAMES: Record<ConfigProcess, string> = { receiver: 'receiver', 'node-agent': 'node agent', 'cluster-worker': 'cluster worker' };

const readersText = (s: Setting): string => (s.readers.length === EVERY_PROCESS.length ? 'all' : s.readers.map((r) => NAMES[r]).join(', '));

const cell = (text: string): string => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

function sectionText(section: Section<Settings>): string[] {
  const rows = Object.entries(section.settings).map(([key, s]) => {
    const variable = `\`${s.env}\`${s.fromFile ? ` (or \`${s.fromFile}\`)` : ''}<br>\`${key}\``;
    return `| ${variable} | ${cell(typeText(defOf(s.type())))} | ${cell(defaultText(s))} | ${readersText(s)} | ${cell(s.doc)} |`;
  });
  return [`## ${section.title}`, '', cell(section.doc), '', '| Setting | Type | Default | Read by | Meaning |', '| --- | --- | --- | --- | --- |', ...rows, ''];
}

function perProcess(): string[] {
  const all = (SECTIONS as readonly Section<Settings>[]).flatMap((s) => Object.values(s.settings));
  return EVERY_PROCESS.map((p) => `- ${NAMES[p]}: ${all.filter((s) => s.readers.includes(p)).length} settings`);
}

/** The reference, as the declarations give it. */
export function configurationReference(): string {
  return [
    '# Configuration',
    '',
    '<!-- Generated from src/core/config/sections/*.ts by `node scripts/config-docs.ts`; edit the declarations, not this file. `npm run lint` fails when the two differ. -->',
    '',
    "Every setting is an environment variable (the first name below) or a key of the optional config file named by `VOLUME_MEDIC_CONFIG` (YAML or JSON; the second name, camelCase). The environment wins over the file. The file may hold any process's settings: each process reads its own and ignores the others', but a key that is no setting at all stops it.",
    '',
    'Each process parses only the settings it reads ("Read by"): a bad value stops the processes that read it (exit 2, with a line naming the variable, what it expected and what it got) and no other. Lists are comma-separated. A secret may come from a file instead (`<NAME>_FILE`, a mounted Secret), never both; `VOLUME_MEDIC_TOKEN_FILE` adds the tokens of a file, one a line. The CLI and the secrets Job read none of these: they take flags and `SECRETS_SPEC`.',
    '',
    ...perProcess(),
    '',
    ...(SECTIONS as readonly Section<Settings>[]).flatMap(sectionText),
  ].join('\n');
}
