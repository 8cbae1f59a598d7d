import { http } from '../../http/node-http.ts';
import { request as httpsRequest } from 'node:https';
import { z } from '../../../core/zod.ts';

// The node agent's way to the API server: JSON over HTTPS with a bearer token, nothing else. The
// agent runs on every node and asks a handful of GETs per job; a generated client for the whole
// API costs tens of MiB of resident memory there (bench/README.md, "Figures behind the code"). Errors carry the HTTP status as
// `code`, as @kubernetes/client-node's do, so the same callers work with either.

export class KubeRestError extends Error {
  override name = 'KubeRestError';
  readonly code: number;
  readonly reason: string | undefined;

  constructor(code: number, method: string, path: string, status: { message?: string; reason?: string } | undefined) {
    super(`${method} ${path}: HTTP ${code}${status?.message ? `: ${status.message}` : ''}`);
    this.code = code;
    this.reason = status?.reason;
  }
}

const StatusBody = z.looseObject({ kind: z.literal('Status'), message: z.optional(z.string()), reason: z.optional(z.string()) });

export interface KubeRestOptions {
  /** `https://host:port` (or `http://` for a local fake). */
  server: string;
  /** The bearer token, asked for on every request (service-account tokens rotate). */
  token: () => string | undefined;
  /** PEM of the cluster CA (the service account's ca.crt). */
  ca?: string | Buffer;
  /** Per request. Default 15 s. */
  timeoutMs?: number;
}

export interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  /** Default application/json; JSON patches need application/json-patch+json. */
  contentType?: string;
}

export class KubeRest {
  readonly #o: KubeRestOptions;
  readonly #url: URL;

  constructor(o: KubeRestOptions) {
    this.#o = o;
    this.#url = new URL(o.server);
    if (this.#url.protocol !== 'https:' && this.#url.protocol !== 'http:') throw new Error(`not an http(s) API server URL: ${o.server}`);
  }

  get<T>(path: string, query?: RequestOptions['query']): Promise<T> {
    return this.request<T>('GET', path, query ? { query } : {});
  }

  request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = new URL(path, this.#url);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const body = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const token = this.#o.token();
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': 'volume-medic-node-agent',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': opts.contentType ?? 'application/json', 'content-length': String(body.length) } : {}),
    };
    const send = url.protocol === 'https:' ? httpsRequest : http.request;
    return new Promise<T>((resolve, reject) => {
      const req = send(url, { method, headers, timeout: this.#o.timeoutMs ?? 15_000, ...(this.#o.ca ? { ca: this.#o.ca } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          const code = res.statusCode ?? 0;
          if (code < 200 || code > 299) {
            const status = StatusBody.safeParse(json);
            reject(new KubeRestError(code, method, url.pathname, status.success ? status.data : { message: text.slice(0, 200) }));
            return;
          }
          if (json === undefined && text) {
            reject(new Error(`${method} ${url.pathname}: the API server answered something that is not JSON`));
            return;
          }
          resolve(json as T);
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer from the API server within ${this.#o.timeoutMs ?? 15_000} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
