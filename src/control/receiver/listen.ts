import { once } from 'node:events';
import type { Express } from 'express';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../adapters/observability/logger.ts';
import type { ReceiverConfig } from '../../core/config/schema.ts';
import { readTls, watchTls } from '../http/tls-files.ts';

// The receiver's HTTP(S) server: TLS when a certificate is configured (reloaded when its files
// change, without a restart), deadlines on slow senders.

export interface Listening {
  server: Server;
  url: string;
  /** Stops taking requests and waits for those in flight. */
  close(): Promise<void>;
}

/**
 * A request not read within its deadline is answered 503 with Retry-After, not Node's 408: a
 * webhook sender retries a 5xx and drops a 4xx (Alertmanager does), and a receiver too busy to
 * read a body in time is no reason to lose the alerts in it (bench/README.md, Fleet). A slow
 * sender is still cut off at the same deadline. Other client errors as Node answers them.
 */
const CLIENT_ERROR_ANSWERS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
  HPE_HEADER_OVERFLOW: 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'HTTP/1.1 413 Payload Too Large\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
};
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/**
 * Answers on the socket unless a response on it has already sent its head (Node's own rule):
 * a keep-alive socket has written earlier responses, and its next request still gets an answer.
 */
function clientErrorAnswerer(server: Server): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  const answering = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    answering.set(socket, res);
    res.once('close', () => {
      if (answering.get(socket) === res) answering.delete(socket);
    });
  });
  return (err, socket) => {
    if (socket.writable && !answering.get(socket)?.headersSent) socket.write(CLIENT_ERROR_ANSWERS[err.code ?? ''] ?? BAD_REQUEST);
    socket.destroy(err);
  };
}

export async function listen(
  config: Pick<
    ReceiverConfig,
    | 'port'
    | 'listenAddress'
    | 'tlsCertFile'
    | 'tlsKeyFile'
    | 'httpHeadersTimeoutMs'
    | 'httpRequestTimeoutMs'
    | 'httpKeepAliveSeconds'
    | 'tokens'
    | 'operatorAuth'
  >,
  app: Express,
  log: Logger,
): Promise<Listening> {
  // Slow senders must not hold sockets for Node's default 300 s: headers and the whole request
  // have deadlines (503 + Retry-After and close, clientErrorAnswerer), checked every second rather than Node's default 30.
  // keepAliveTimeout: enrolled agents' asks reuse one connection each (HTTP_KEEP_ALIVE_SECONDS says why).
  const timeouts = {
    keepAliveTimeout: config.httpKeepAliveSeconds * 1000,
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
  server.on('clientError', clientErrorAnswerer(server));
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
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // close() ends the connections idle at that moment; one whose request was still being
      // answered would then be kept for the whole keepAliveTimeout (HTTP_KEEP_ALIVE_SECONDS): each
      // is closed as it goes idle, and none outlives the request deadline.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      const last = setTimeout(() => server.closeAllConnections(), config.httpRequestTimeoutMs);
      try {
        await closed;
      } finally {
        clearInterval(sweep);
        clearTimeout(last);
      }
    },
  };
}
