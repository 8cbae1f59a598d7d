import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, redisAnswers } from '../../scripts/lib/local-redis.ts';

// A private redis-server whose users come from an ACL file, as the chart's Redis runs: for the
// tests of the deploy file's grants, per-node users, enrolment, revocation and the memory budget.
// The default user is whatever the file says (the deploy file turns it off), so the server is
// reached as the test's own admin, appended after the file's lines: it reads ACL LOG, sets up
// state and checks what the users did.

const ACL_ADMIN_LINE = 'user vmtest-admin on >admin-pw ~* &* +@all';

export interface AclRedisOptions {
  /** The ACL file's lines (ACL_ADMIN_LINE is appended). */
  acl: string;
  /** More redis-server arguments (TLS, memory limits); given the server's directory when a function. */
  args?: readonly string[] | ((dir: string) => readonly string[]);
  /** The directory's name in tmpdir, before a random suffix. */
  name?: string;
}

export interface AclRedis {
  readonly port: number;
  /** The server's directory: its users.acl, and room for the test's own files. */
  readonly dir: string;
  /** redis:// as the test's admin. */
  readonly adminUrl: string;
  /** Stops the server (SIGTERM, waited for) and removes its directory. */
  stop(): Promise<void>;
}

export async function startAclRedis(o: AclRedisOptions): Promise<AclRedis> {
  const dir = mkdtempSync(join(tmpdir(), `${o.name ?? 'vm-acl-redis'}-`));
  writeFileSync(join(dir, 'users.acl'), `${o.acl.endsWith('\n') || o.acl === '' ? o.acl : `${o.acl}\n`}${ACL_ADMIN_LINE}\n`);
  const port = await freePort();
  const extra = typeof o.args === 'function' ? o.args(dir) : (o.args ?? []);
  const base = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--maxmemory-policy', 'noeviction'];
  const server = spawn('redis-server', [...base, ...extra, '--aclfile', join(dir, 'users.acl')], { stdio: 'ignore' });
  const exited = once(server, 'exit');
  const adminUrl = `redis://vmtest-admin:admin-pw@127.0.0.1:${port}`;
  let up = false;
  for (let i = 0; i < 100 && !(up = await redisAnswers(adminUrl)); i++) await new Promise((r) => setTimeout(r, 50));
  const stop = async (): Promise<void> => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (!up) {
    await stop();
    throw new Error(`redis-server with an ACL file on port ${port} did not answer its admin`);
  }
  return { port, dir, adminUrl, stop };
}
