// `dumpe2fs -h <dev>`: the ext4 super block's header, read-only (docs/decisions/0008 §1.3). What
// this runbook needs of it: the state (`clean`, `clean with errors`, `not clean with errors`, ...),
// how many errors the file system recorded, and when. Other fields are ignored; a header without
// `Filesystem state:` is not an ext super block as far as we are concerned (null).

export interface Dumpe2fsHeader {
  /** As printed: `clean`, `not clean`, `clean with errors`, `not clean with errors`. */
  state: string;
  /** The state says `with errors`: the file system must be checked before it is trusted. */
  hasErrors: boolean;
  clean: boolean;
  /** `FS Error count:`; 0 when the line is absent (dumpe2fs prints it only when non-zero). */
  errorCount: number;
  firstErrorTime: string | null;
  firstErrorFunction: string | null;
  lastErrorTime: string | null;
  lastErrorFunction: string | null;
  errorsBehavior: string | null;
  uuid: string | null;
}

function fields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z][A-Za-z #]*?):\s+(.*)$/.exec(line.trimEnd());
    if (m?.[1] && m[2] !== undefined && !out.has(m[1])) out.set(m[1], m[2].trim());
  }
  return out;
}

export function parseDumpe2fsHeader(text: string): Dumpe2fsHeader | null {
  const f = fields(text);
  const state = f.get('Filesystem state');
  if (!state) return null;
  const count = f.get('FS Error count');
  return {
    state,
    hasErrors: /\bwith errors\b/.test(state),
    clean: /^clean\b/.test(state) && !/\bwith errors\b/.test(state),
    errorCount: count && /^\d+$/.test(count) ? Number(count) : 0,
    firstErrorTime: f.get('First error time') ?? null,
    firstErrorFunction: f.get('First error function') ?? null,
    lastErrorTime: f.get('Last error time') ?? null,
    lastErrorFunction: f.get('Last error function') ?? null,
    errorsBehavior: f.get('Errors behavior') ?? null,
    uuid: f.get('Filesystem UUID') ?? null,
  };
}
