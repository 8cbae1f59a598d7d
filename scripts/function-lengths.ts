// Lists the longest functions under the given folders (default src/ and workers/), measured from
// the syntax tree:
//   node scripts/function-lengths.ts [--over N] [--cap N] [--file-cap N] [--top N] [dir...]
// Exits 1 when
// - (--over) a function longer than N lines has no reason in its header (a comment above it that
//   says `long because ...`): issue 32's rule that no function runs over ~80 lines unexplained;
// - (--cap) a function is longer than N lines, reason or not;
// - (--file-cap) a .ts file is longer than N lines: one concern a file (issue 45).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

interface Measured {
  file: string;
  name: string;
  line: number;
  lines: number;
  reason: boolean;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p)) return p.name.getText(sf);
  if (p && ts.isPropertyAssignment(p)) return p.name.getText(sf);
  if (p && ts.isPropertyDeclaration(p)) return p.name.getText(sf);
  return '(anonymous)';
}

function measure(file: string): Measured[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Measured[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      // The header: the comments before the statement that holds the function.
      let holder: ts.Node = node;
      while (
        holder.parent &&
        !ts.isSourceFile(holder.parent) &&
        !ts.isBlock(holder.parent) &&
        !ts.isClassDeclaration(holder.parent) &&
        !ts.isObjectLiteralExpression(holder.parent)
      )
        holder = holder.parent;
      const header = (ts.getLeadingCommentRanges(text, holder.getFullStart()) ?? []).map((r) => text.slice(r.pos, r.end)).join('\n');
      out.push({ file, name: nameOf(node, sf), line: start + 1, lines: end - start + 1, reason: /long because/i.test(header) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const args = process.argv.slice(2);
const opt = (name: string): number | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = Number(args[i + 1]);
  args.splice(i, 2);
  return v;
};
const over = opt('--over');
const cap = opt('--cap');
const fileCap = opt('--file-cap');
const top = opt('--top') ?? 15;
const dirs = args.length ? args : ['src', 'workers'];
const sources = dirs.flatMap(files);
const all = sources.flatMap(measure).sort((a, b) => b.lines - a.lines);
for (const m of all.slice(0, top))
  console.log(`${String(m.lines).padStart(4)}  ${relative('.', m.file)}:${m.line}  ${m.name}${m.reason ? '  (long because: in its header)' : ''}`);
console.log(`${all.filter((m) => m.lines > 80).length} functions over 80 lines, of ${all.length}`);
const failures: string[] = [];
if (over !== undefined)
  for (const m of all.filter((m) => m.lines > over && !m.reason))
    failures.push(`${relative('.', m.file)}:${m.line} ${m.name}: ${m.lines} lines, over ${over}, and no "long because" in its header`);
if (cap !== undefined)
  for (const m of all.filter((m) => m.lines > cap))
    failures.push(`${relative('.', m.file)}:${m.line} ${m.name}: ${m.lines} lines, over the cap of ${cap}: cut it into named stages`);
if (fileCap !== undefined)
  for (const file of sources) {
    const lines = readFileSync(file, 'utf8').split('\n').length - 1;
    if (lines > fileCap) failures.push(`${relative('.', file)}: ${lines} lines, over the cap of ${fileCap}: split it along its concerns`);
  }
for (const f of failures) console.error(f);
process.exit(failures.length ? 1 : 0);
