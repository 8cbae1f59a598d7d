// A private IPv4 address on this machine that a lab guest can reach, for services the guest's
// kernel must talk to (a one-node Ceph for kernel RBD).
//
// Why: qemu's user-mode networking (slirp) turns the guest's connections into ordinary sockets
// of the qemu process, so the guest reaches any address the host can. 127.0.0.1 does not work
// for Ceph: the guest reaches the monitor through slirp's 10.0.2.2 -> host loopback, but the
// monitor then hands out the OSD's address, 127.0.0.1, which in the guest is the guest itself.
// So the cluster binds to an address of its own: one end of a veth pair whose other end sits in
// a network namespace made for this run. Nothing leaves the machine, no existing interface or
// address is touched, and removing the namespace removes both ends.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LabLink {
  /** The host end's address: bind services here. */
  address: string;
  /** Removes the namespace and the veth pair. Idempotent. */
  remove(): Promise<void>;
}

const ip = async (...args: string[]): Promise<string> => (await run('ip', args, { timeout: 10_000 })).stdout;

/** Whether 10.254.<n>.0/30 overlaps anything this machine already routes or owns. */
async function inUse(n: number): Promise<boolean> {
  const taken = `${await ip('-4', '-o', 'addr', 'show')}\n${await ip('-4', 'route', 'show', 'table', 'all')}`;
  return new RegExp(`\\b10\\.254\\.${n}\\.`).test(taken);
}

export async function createLabLink(): Promise<LabLink> {
  const tag = `${process.pid % 100_000}`;
  const ns = `vm-lab-${tag}`;
  const hostEnd = `vmlab${tag}`;
  const peerEnd = `vmlabp${tag}`;
  let n = 20 + (process.pid % 200);
  for (let i = 0; i < 200 && (await inUse(n)); i++) n = 20 + ((n - 19) % 200);
  if (await inUse(n)) throw new Error('no free 10.254.x.0/30 for the lab link');

  const remove = async (): Promise<void> => {
    await run('ip', ['netns', 'del', ns], { timeout: 10_000 }).catch(() => undefined);
    await run('ip', ['link', 'del', hostEnd], { timeout: 10_000 }).catch(() => undefined);
  };
  await remove();
  try {
    await ip('netns', 'add', ns);
    await ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', peerEnd);
    await ip('link', 'set', peerEnd, 'netns', ns);
    await ip('addr', 'add', `10.254.${n}.1/30`, 'dev', hostEnd);
    await ip('-n', ns, 'addr', 'add', `10.254.${n}.2/30`, 'dev', peerEnd);
    await ip('-n', ns, 'link', 'set', peerEnd, 'up');
    await ip('link', 'set', hostEnd, 'up');
  } catch (err) {
    await remove();
    throw new Error(`could not create the lab link (ip netns + veth): ${(err as Error).message}`);
  }
  return { address: `10.254.${n}.1`, remove };
}
