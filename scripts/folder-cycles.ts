// Fails when folders import each other in a loop (`npm run lint`): dependency-cruiser's
// no-circular rule sees loops between modules only, and a loop between two folders through
// different files is as hard to live with. A folder is src/<layer>/<folder> or workers/<folder>
// (a file directly under src/<layer>/ or workers/ is its own). Prints each loop with the imports
// that close it.
import { execFileSync } from 'node:child_process';
import { z } from 'zod';

const Cruise = z.object({
  modules: z.array(z.object({ source: z.string(), dependencies: z.array(z.object({ resolved: z.string(), dependencyTypes: z.array(z.string()) })) })),
});

/** How many path segments name a folder: src/<layer>/<folder>, workers/<folder>. */
const FOLDER_DEPTH: Record<string, number> = { src: 3, workers: 2 };

const folderOf = (path: string): string | undefined => {
  const p = path.split('/');
  const depth = FOLDER_DEPTH[p[0]!];
  if (depth === undefined || p.length < depth) return undefined;
  return p.length > depth ? p.slice(0, depth).join('/') : path;
};

const json = execFileSync('npx', ['depcruise', 'src', 'workers', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
  encoding: 'utf8',
  maxBuffer: 256 * 1024 * 1024,
});
const { modules } = Cruise.parse(JSON.parse(json));
const edges = new Map<string, Map<string, string[]>>();
for (const m of modules) {
  const from = folderOf(m.source);
  if (!from) continue;
  for (const d of m.dependencies) {
    const to = folderOf(d.resolved);
    if (!to || to === from || !d.dependencyTypes.includes('local')) continue;
    const out = edges.get(from) ?? new Map<string, string[]>();
    out.set(to, [...(out.get(to) ?? []), `${m.source} -> ${d.resolved}`]);
    edges.set(from, out);
  }
}

// Tarjan's strongly connected components: a component of more than one folder is a loop.
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const loops: string[][] = [];
let next = 0;
const visit = (v: string): void => {
  index.set(v, next);
  low.set(v, next);
  next += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v)!, low.get(w)!));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
  }
  if (low.get(v) === index.get(v)) {
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      component.push(w);
    }
    if (component.length > 1) loops.push(component.sort());
  }
};
for (const v of edges.keys()) if (!index.has(v)) visit(v);

if (loops.length === 0) {
  console.log(`no import loop between folders (${edges.size} folders)`);
} else {
  for (const loop of loops) {
    console.error(`import loop between folders: ${loop.join(', ')}`);
    for (const a of loop)
      for (const [b, why] of edges.get(a) ?? []) if (loop.includes(b)) console.error(`  ${why.length} import(s) ${a} -> ${b}, e.g. ${why[0]}`);
  }
  process.exit(1);
}
