import type { Server } from 'node:http';
import type { TLSSocket } from 'node:tls';

// What a bench's server process saw, for bench/fleet-paths.ts: where an HTTPS ask's cost goes
// (a new TCP connection, a full TLS handshake or a resumed session) and how many requests each
// path took. Asked over IPC (`stats`), answered `{ stats }`.

export interface ServerStats {
  connections: number;
  /** TLS handshakes done, and of them those that resumed a session (no key exchange). */
  handshakes: number;
  resumed: number;
  requests: Record<string, number>;
}

export function answerStatsRequests(server: Server): void {
  const stats: ServerStats = { connections: 0, handshakes: 0, resumed: 0, requests: {} };
  server.on('connection', () => stats.connections++);
  server.on('secureConnection', (s: TLSSocket) => {
    stats.handshakes++;
    if (s.isSessionReused()) stats.resumed++;
  });
  server.on('request', (req: { url?: string }) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    stats.requests[path] = (stats.requests[path] ?? 0) + 1;
  });
  process.on('message', (m: unknown) => {
    if (m === 'stats') process.send?.({ stats });
  });
}
