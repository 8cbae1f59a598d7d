import { isPodUid } from '../catalogue/names.ts';

// kubelet's line about an orphaned pod, in any of the shapes kubelet_volumes.go has logged
// (docs/decisions/0008 §1.1): the 1.6 form (`Orphaned pod "<uid>" found, but volume paths are
// still present on disk.`), the glog roll-up up to 1.19 (`... on disk : There were a total of N
// errors similar to this. ...`) and the structured klog line from 1.20 on
// (`"There were many similar errors. ..." err="orphaned pod \"<uid>\" found, but ..." numErrs=N`).
// The line only triggers a scan: it names the first orphan of a sweep, never all of them. A line
// that names no valid UID is dropped, never guessed at: the UID becomes a path component.

type OrphanLineKind = 'volume-paths' | 'volume-subpaths' | 'rmdir-failed' | 'volumes-dir' | 'read-error' | 'pod-dir';

export interface OrphanLine {
  uid: string;
  kind: OrphanLineKind;
  /** The path kubelet could not remove (`failed to rmdir() volume at path <path>`). */
  path?: string;
  /** The error text kubelet appended (`directory not empty`, `device or resource busy`, ...). */
  errno?: string;
  /** How many similar errors the sweep had (the roll-up's N). */
  numErrs?: number;
}

/** The `err="..."` value of a structured klog line, its `\"` and `\\` unescaped. */
function structuredErr(line: string): string | null {
  const m = /\berr="((?:[^"\\]|\\.)*)"/.exec(line);
  return m?.[1] === undefined ? null : m[1].replace(/\\(["\\])/g, '$1');
}

const ORPHAN = /\b[Oo]rphaned pod "([^"]*)" found, but (.*)$/;
const ROLL_UP = /\s*:\s*There were a total of (\d+) errors similar to this\..*$/;
const RMDIR = /^failed to rmdir\(\) (?:volume|subpath) at path (.+?): ([^:]+)$/;

function classify(rest: string): Pick<OrphanLine, 'kind' | 'path' | 'errno'> | null {
  const body = rest.replace(/\.\s*$/, '');
  if (/^volume paths are still present on disk$/.test(body)) return { kind: 'volume-paths' };
  if (/^volume subpaths are still present on disk$/.test(body)) return { kind: 'volume-subpaths' };
  const rmdir = RMDIR.exec(body);
  if (rmdir?.[1] && rmdir[2]) return { kind: 'rmdir-failed', path: rmdir[1], errno: rmdir[2].trim() };
  const tail = (prefix: RegExp, kind: OrphanLineKind): Pick<OrphanLine, 'kind' | 'errno'> | null => {
    const m = prefix.exec(body);
    return m ? { kind, ...(m[1] ? { errno: m[1].trim() } : {}) } : null;
  };
  return (
    tail(/^error occurred when trying to remove the volumes dir(?::\s*(.*))?$/, 'volumes-dir') ??
    tail(/^error occurred during reading (?:of )?(?:volume dir|volume-subpaths dir) from disk(?::\s*(.*))?$/, 'read-error') ??
    tail(/^error occurred when trying to remove (?:subdir "[^"]*"|the pod directory)(?::\s*(.*))?$/, 'pod-dir')
  );
}

export function parseOrphanLine(line: string): OrphanLine | null {
  const err = structuredErr(line);
  const text = err ?? line;
  const m = ORPHAN.exec(text);
  const uid = m?.[1];
  if (!m || uid === undefined || !isPodUid(uid)) return null;
  let rest = m[2] ?? '';
  let numErrs: number | undefined;
  const rollUp = ROLL_UP.exec(rest);
  if (rollUp) {
    numErrs = Number(rollUp[1]);
    rest = rest.slice(0, rollUp.index);
  }
  if (err !== null) {
    const n = /\bnumErrs=(\d+)\b/.exec(line);
    if (n) numErrs = Number(n[1]);
  }
  const kind = classify(rest.trim());
  if (!kind) return null;
  return { uid, ...kind, ...(numErrs !== undefined ? { numErrs } : {}) };
}
