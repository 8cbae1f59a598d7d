import { accessSync, constants } from 'node:fs';
import { z } from '../../zod.ts';
import { ConfigError } from '../config-error.ts';
import { list } from '../env-text.ts';
import { section, setting } from '../setting.ts';
import { Cidrs, Count, Flag, Millis, NonEmpty, Port } from '../types.ts';

const RECEIVER = ['receiver'] as const;

export const receiver = section({
  title: 'Receiver: HTTP',
  doc: 'How the receiver listens, whom it lets in, and what it accepts.',
  settings: {
    port: setting({ env: 'PORT', readers: RECEIVER, type: () => z._default(Port, 8080), doc: 'HTTP port of the receiver.' }),
    listenAddress: setting({ env: 'LISTEN_ADDRESS', readers: RECEIVER, type: () => z._default(z.string(), '0.0.0.0'), doc: 'Address the receiver binds to.' }),
    tlsCertFile: setting({
      env: 'TLS_CERT_FILE',
      readers: RECEIVER,
      type: () => z.optional(NonEmpty),
      doc: "The receiver serves HTTPS with this certificate chain and TLS_KEY_FILE's key (PEM; a mounted Secret's tls.crt and tls.key), read again when either file changes, without a restart. Both or neither.",
    }),
    tlsKeyFile: setting({ env: 'TLS_KEY_FILE', readers: RECEIVER, type: () => z.optional(NonEmpty), doc: 'The key of TLS_CERT_FILE (PEM).' }),
    allowPlaintextHttp: setting({
      env: 'ALLOW_PLAINTEXT_HTTP',
      readers: RECEIVER,
      type: () => z._default(Flag, false),
      doc: "The receiver serves plain HTTP only when this says so by name: bearer tokens, operators' Kubernetes tokens and the dashboard's cookie would cross the network in clear. False: no TLS_CERT_FILE/TLS_KEY_FILE is a configuration error (exit 2).",
    }),
    httpHeadersTimeoutMs: setting({
      env: 'HTTP_HEADERS_TIMEOUT_MS',
      readers: RECEIVER,
      type: () => z._default(Millis, 10_000),
      doc: "How long a client may take to send a request's headers (Node's default is 300 s, which lets a few slow senders hold sockets and memory). A request over it gets 503 + Retry-After (src/control/receiver/listen.ts) and its socket is closed. May not exceed HTTP_REQUEST_TIMEOUT_MS.",
    }),
    httpRequestTimeoutMs: setting({
      env: 'HTTP_REQUEST_TIMEOUT_MS',
      readers: RECEIVER,
      type: () => z._default(Millis, 30_000),
      doc: 'How long a whole request may take, body included; over it: 503 + Retry-After and the socket closed. Webhook bodies are at most BODY_LIMIT and come from nearby senders.',
    }),
    httpKeepAliveSeconds: setting({
      env: 'HTTP_KEEP_ALIVE_SECONDS',
      readers: RECEIVER,
      type: () => z._default(Count(1), 2400),
      doc: 'How long an idle connection stays open (Node\'s keepAliveTimeout, announced in Keep-Alive). Enrolled node agents keep theirs from one enrolment to the next (every 30 min) and take their breaker slots on it: a storm of job starts then costs no TCP or TLS handshake per ask (bench/README.md, "The enrolled storm"). Each open connection holds a few KiB of the receiver\'s memory.',
    }),
    bodyLimit: setting({
      env: 'BODY_LIMIT',
      readers: RECEIVER,
      type: () => z._default(Count(1024), 1024 * 1024),
      doc: 'Largest webhook body accepted, in bytes (larger: 413).',
    }),
    tokens: setting({
      env: 'VOLUME_MEDIC_TOKEN',
      readers: RECEIVER,
      type: () => z._default(z.array(z.string().check(z.minLength(16, 'a token must be at least 16 characters'))), []),
      read: list,
      secret: true,
      doc: 'Bearer token(s) the webhook senders must present; comma-separated to rotate. Or VOLUME_MEDIC_TOKEN_FILE: a file with one token a line (both: every token of the two).',
    }),
    allowUnauthenticated: setting({
      env: 'ALLOW_UNAUTHENTICATED',
      readers: RECEIVER,
      type: () => z._default(Flag, false),
      doc: 'The receiver starts without any token only when this is true (then it warns at start and on /readyz). False: no token is a configuration error (exit 2).',
    }),
    trustedProxyCidrs: setting({
      env: 'TRUSTED_PROXY_CIDRS',
      readers: RECEIVER,
      type: () => z._default(Cidrs('10.0.0.0/8'), []),
      read: list,
      doc: "Reverse proxies (ingress controllers) whose X-Forwarded-For and X-Forwarded-Proto are believed: the client address failed attempts count against, and whether the dashboard's cookie is Secure. None: the TCP peer, and the socket's own protocol.",
    }),
    authFailuresPerMinute: setting({
      env: 'AUTH_FAILURES_PER_MINUTE',
      readers: RECEIVER,
      type: () => z._default(Count(0), 20),
      doc: "Failed authentications (bearer tokens, dashboard sign-ins, refused enrolments and agents' breaker asks) one client address may make per minute, as a bucket of this size refilled at this rate; beyond it every attempt from the address gets 429 with Retry-After. 0: no limit.",
    }),
    uiSessionTtlSeconds: setting({
      env: 'UI_SESSION_TTL_SECONDS',
      readers: RECEIVER,
      type: () => z._default(z.coerce.number().check(z.int(), z.gte(60), z.lte(7 * 24 * 3600)), 8 * 3600),
      doc: "How long a dashboard sign-in lasts (server-side, in Redis; signing out ends it at once). The operator's RBAC is checked again on every request regardless. (The queue board is always read-only; DASHBOARD_WRITE is gone.)",
    }),
  },
  verify: (c) => {
    if (c.httpHeadersTimeoutMs !== undefined && c.httpRequestTimeoutMs !== undefined && c.httpHeadersTimeoutMs > c.httpRequestTimeoutMs) {
      throw new ConfigError(
        `invalid configuration:\n  HTTP_HEADERS_TIMEOUT_MS: may not exceed HTTP_REQUEST_TIMEOUT_MS (${c.httpRequestTimeoutMs}) (got ${c.httpHeadersTimeoutMs})`,
      );
    }
    if ((c.tlsCertFile === undefined) !== (c.tlsKeyFile === undefined)) {
      throw new ConfigError('invalid configuration:\n  TLS_CERT_FILE and TLS_KEY_FILE: set both (the certificate chain and its key) or neither');
    }
    for (const [name, file] of [
      ['TLS_CERT_FILE', c.tlsCertFile],
      ['TLS_KEY_FILE', c.tlsKeyFile],
    ] as const) {
      if (!file) continue;
      try {
        accessSync(file, constants.R_OK);
      } catch (err) {
        throw new ConfigError(`${name}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
      }
    }
  },
});
