import { readFileSync, statSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';

// The receiver's certificate and key from files (a mounted Secret: kubelet swaps the files when
// the Secret changes, cert-manager or the chart renews it). Read again when either file's
// modification time or size changes, checked every few seconds: a renewed certificate is served
// to new connections without a restart, and a half-written pair (the key before the chain) is
// kept out by building a full context before swapping it in.

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export function readTls(f: TlsFiles): SecureContextOptions {
  const opts = { cert: readFileSync(f.certFile), key: readFileSync(f.keyFile) };
  // Throws on a key that does not match the chain, or unreadable PEM: nothing half-made is served.
  createSecureContext(opts);
  return opts;
}

const stamp = (file: string): string => {
  try {
    const s = statSync(file);
    return `${s.mtimeMs}/${s.size}/${s.ino}`;
  } catch {
    return 'missing';
  }
};

/**
 * Calls `apply` with the files' new contents whenever they change; `onError` when they cannot be
 * read or do not match (the previous certificate stays in use). Returns a stop function.
 */
export function watchTls(f: TlsFiles, apply: (opts: SecureContextOptions) => void, onError: (err: Error) => void, intervalMs = 5_000): () => void {
  let last = `${stamp(f.certFile)}|${stamp(f.keyFile)}`;
  let failed = '';
  const timer = setInterval(() => {
    const now = `${stamp(f.certFile)}|${stamp(f.keyFile)}`;
    if (now === last) return;
    try {
      apply(readTls(f));
      last = now;
    } catch (err) {
      // Said once per state of the files, tried again each interval.
      if (failed !== now) onError(err as Error);
      failed = now;
    }
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
