// The cached lab guest image: built (once) by scripts/lab/build-image.sh, booted by vm.ts.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const BUILD_SCRIPT = fileURLToPath(new URL('../../scripts/lab/build-image.sh', import.meta.url));

const manifestSchema = z.object({
  hash: z.string(),
  kernelPackage: z.string(),
  kernelVersion: z.string(),
  kernelPackageVersion: z.string(),
  suite: z.string(),
  mirror: z.string(),
  packages: z.string(),
  rootfsMiB: z.number(),
  builtAt: z.string(),
  buildSeconds: z.number(),
});
type LabManifest = z.infer<typeof manifestSchema>;

export interface LabImage {
  dir: string;
  kernel: string;
  initrd: string;
  rootfs: string;
  manifest: LabManifest;
  /** Wall time of this ensureLabImage() call: a full build, or the cache check. */
  ensureMs: number;
}

/**
 * Why the lab tier cannot run here, or null when it can. Cheap: no build, no boot.
 * VM_LAB_SKIP=<reason> forces a skip (e.g. on a shared CI runner without the minutes to spare).
 */
export function labSkipReason(): string | null {
  if (process.env.VM_LAB_SKIP) return `VM_LAB_SKIP is set (${process.env.VM_LAB_SKIP})`;
  if (platform() !== 'linux' || arch() !== 'x64') return `the lab guest is x86_64 Linux under qemu; this is ${platform()}/${arch()}`;
  const hasQemu = spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' }).status === 0;
  const isRoot = process.getuid?.() === 0;
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!isRoot) return 'building the lab guest needs root (apt-get, debootstrap)';
  if (!hasQemu && !hasApt) return 'no qemu-system-x86_64 and no apt-get to install it';
  return null;
}

/** Runs build-image.sh (a cache hit takes milliseconds) and returns the image. Progress goes to `log`. */
export async function ensureLabImage(log: (line: string) => void = () => {}): Promise<LabImage> {
  const started = performance.now();
  const child = spawn('bash', [BUILD_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderrTail = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderrTail = (stderrTail + d).slice(-8000);
    for (const line of d.split('\n')) if (line.trim()) log(line);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`scripts/lab/build-image.sh exited with ${code}:\n${stderrTail}`);
  const dir = stdout.trim().split('\n').pop() ?? '';
  const manifest = manifestSchema.parse(JSON.parse(readFileSync(`${dir}/manifest.json`, 'utf8')));
  return {
    dir,
    kernel: `${dir}/vmlinuz`,
    initrd: `${dir}/initrd.img`,
    rootfs: `${dir}/rootfs.ext4`,
    manifest,
    ensureMs: Math.round(performance.now() - started),
  };
}
