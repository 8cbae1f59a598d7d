// Polling a guest until something holds: multipathd notices path changes on its own schedule.
import type { LabVm } from './vm.ts';

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Runs `cmd` in the guest until `done(stdout)` is true and returns that stdout; rejects after
 * timeoutMs (default 60 s) with the last output, so a failing test shows what the guest saw.
 */
export async function waitInGuest(
  vm: LabVm,
  what: string,
  cmd: readonly string[] | string,
  done: (stdout: string) => boolean,
  { timeoutMs = 60_000, intervalMs = 500 }: WaitOptions = {},
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const r = await vm.run(cmd, { timeoutMs: 30_000 });
    last = r.stdout + r.stderr;
    if (done(r.stdout)) return r.stdout;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last output:\n${last}`);
    await new Promise((res) => setTimeout(res, intervalMs));
  }
}
