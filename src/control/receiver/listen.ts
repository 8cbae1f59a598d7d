import { once } from 'node:events';
import type { Express } from 'express';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { Config } from '../../core/config/schema.ts';
import { readTls, watchTls } from '../http/tls-files.ts';

// The receiver's HTTP(S) server: TLS when a certificate is configured (reloaded when its files
// change, without a restart), deadlines on slow senders.

export interface Listening {
  server: Server;
  url: string;
  /** Stops taking requests and waits for those in flight. */
  close(): Promise<void>;
}

export async function listen(config: Config, app: Express, log: Logger): Promise<Listening> {
  // Slow senders must not hold sockets for Node's default 300 s: headers and the whole request
  // have deadlines (408 and close), checked every second rather than Node's default 30.
  const timeouts = {
    headersTimeout: config.httpHeadersTimeoutMs,
    requestTimeout: config.httpRequestTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, config.httpHeadersTimeoutMs),
  };
  const tlsFiles = config.tlsCertFile && config.tlsKeyFile ? { certFile: config.tlsCertFile, keyFile: config.tlsKeyFile } : undefined;
  const server: Server = tlsFiles ? createHttpsServer({ ...timeouts, ...readTls(tlsFiles) }, app) : createServer(timeouts, app);
  const stopTlsWatch =
    tlsFiles && server instanceof HttpsServer
      ? watchTls(
          tlsFiles,
          (opts) => {
            server.setSecureContext(opts);
            log.info({ cert: tlsFiles.certFile }, 'TLS certificate reloaded');
          },
          (err) =>
            log.error({ err: err.message, cert: tlsFiles.certFile }, 'the TLS certificate files changed but cannot be used; still serving the previous one'),
        )
      : undefined;
  server.listen(config.port, config.listenAddress);
  await once(server, 'listening');
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `${tlsFiles ? 'https' : 'http'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`;
  log.info(
    { url, tls: tlsFiles ? 'on' : 'off', auth: config.tokens.length > 0 ? 'bearer token required' : 'none', operators: config.operatorAuth },
    'receiver listening',
  );
  return {
    server,
    url,
    close: async () => {
      stopTlsWatch?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
