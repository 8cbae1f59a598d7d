// Lists the longest functions under the given folders (default src/ and workers/), measured from
// the syntax tree: `node scripts/function-lengths.ts [--over N] [--top N] [dir...]`. With --over,
// exits 1 when a function longer than N lines has no reason in its header (a comment above it
// that says `long because ...`): issue 32's rule that no function runs over ~80 lines unexplained.
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
const top = opt('--top') ?? 15;
const dirs = args.length ? args : ['src', 'workers'];
const all = dirs
  .flatMap(files)
  .flatMap(measure)
  .sort((a, b) => b.lines - a.lines);
for (const m of all.slice(0, top))
  console.log(`${String(m.lines).padStart(4)}  ${relative('.', m.file)}:${m.line}  ${m.name}${m.reason ? '  (long because: in its header)' : ''}`);
console.log(`${all.filter((m) => m.lines > 80).length} functions over 80 lines, of ${all.length}`);
if (over !== undefined) {
  const bad = all.filter((m) => m.lines > over && !m.reason);
  for (const m of bad) console.error(`${relative('.', m.file)}:${m.line} ${m.name}: ${m.lines} lines, over ${over}, and no "long because" in its header`);
  process.exit(bad.length ? 1 : 0);
}
