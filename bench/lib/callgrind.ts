import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

// Instructions a process under `valgrind --tool=callgrind` executes (user space only: the
// kernel's share of a system call is not in it), read as a running total: the difference of two
// reads is what ran between them. The
// count is repeatable for the same binary and input whatever else the machine does, where CPU
// time on this shared 2-core VM moves by a third between runs: the figure for "what would this
// cost a Redis with a core of its own" (bench/README.md, issue 21).

export interface InstructionCounter {
  /** Instructions since the counter was made (each call dumps callgrind's counts and adds them up). */
  total(): number;
}

export function callgrindCounter(pid: number, outDir: string): InstructionCounter {
  const control = (...args: string[]): void => {
    execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore', timeout: 120_000 });
  };
  const dump = (): number => {
    for (const f of readdirSync(outDir)) if (f.startsWith(`callgrind.out.${pid}.`)) rmSync(join(outDir, f));
    control('-d');
    const dumps = readdirSync(outDir).filter((f) => f.startsWith(`callgrind.out.${pid}.`));
    if (dumps.length !== 1) throw new Error(`callgrind: expected one dump in ${outDir}, found ${dumps.length}`);
    const m = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(outDir, dumps[0]!), 'utf8'));
    if (!m) throw new Error('callgrind: no totals in the dump');
    return Number(m[1]);
  };
  control('-z');
  let sum = 0;
  return {
    total: () => (sum += dump()),
  };
}
