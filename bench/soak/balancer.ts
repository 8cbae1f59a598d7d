import { connect, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

// A loopback TCP balancer in front of the receiver replicas, as a Service's kube-proxy is: each
// new connection goes to the next backend in turn; a backend that refuses a connection is left
// out until a probe connects again (every 500 ms), and the client's connection is tried on the
// next one, so a dead replica costs its own open connections only. Nothing is parsed: HTTP
// keep-alive connections stay on the backend they were opened to, as through a Service.

export interface Balancer {
  url: string;
  /** Replaces backend `i`'s port (a replica restarted on a new port). */
  set(i: number, port: number): void;
  close(): Promise<void>;
}

export async function startBalancer(ports: number[]): Promise<Balancer> {
  const backends = ports.map((port) => ({ port, up: true }));
  let next = 0;
  const open = new Set<Socket>();

  const pick = (tried: Set<number>): number | undefined => {
    for (let k = 0; k < backends.length; k++) {
      const i = (next + k) % backends.length;
      if (backends[i]!.up && !tried.has(i)) {
        next = (i + 1) % backends.length;
        return i;
      }
    }
    return undefined;
  };

  const route = (client: Socket, tried = new Set<number>()): void => {
    const i = pick(tried);
    if (i === undefined) {
      client.destroy();
      return;
    }
    tried.add(i);
    const up = connect({ host: '127.0.0.1', port: backends[i]!.port });
    open.add(up);
    up.once('close', () => open.delete(up));
    let connected = false;
    up.once('error', () => {
      if (connected) {
        client.destroy();
        return;
      }
      backends[i]!.up = false;
      route(client, tried);
    });
    up.once('connect', () => {
      connected = true;
      client.pipe(up);
      up.pipe(client);
      client.resume();
      client.once('error', () => up.destroy());
      client.once('close', () => up.destroy());
      up.once('close', () => client.destroy());
    });
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    open.add(client);
    client.once('close', () => open.delete(client));
    client.on('error', () => {});
    route(client);
  });
  const probe = setInterval(() => {
    for (const b of backends) {
      if (b.up) continue;
      const s = connect({ host: '127.0.0.1', port: b.port });
      s.once('connect', () => {
        b.up = true;
        s.destroy();
      });
      s.once('error', () => s.destroy());
    }
  }, 500);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    set: (i, p) => {
      backends[i] = { port: p, up: true };
    },
    close: async () => {
      clearInterval(probe);
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
