// The CLI's only way in: the receiver's HTTP API, with the operator's bearer token when there is
// one. A 401 says where the token came from (or why there was none).

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface ApiClient {
  /** The answer's JSON, unread: each command parses what it prints (answers.ts). */
  get(path: string): Promise<unknown>;
  post(path: string, body: unknown): Promise<unknown>;
}

/** The `error` of an error answer, when it has one. */
const errorOf = (json: unknown): string | undefined => {
  const e = json !== null && typeof json === 'object' ? (json as Record<string, unknown>)['error'] : undefined;
  return typeof e === 'string' ? e : undefined;
};

export function apiClient(baseUrl: string, token: string | undefined, tokenFrom = '--token'): ApiClient {
  const base = baseUrl.replace(/\/+$/, '');
  const call = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new ApiError(
        0,
        `cannot reach ${base}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = { error: text.slice(0, 500) };
    }
    const hint = res.status === 401 ? ` (operator token: ${token ? tokenFrom : tokenFrom || 'none'})` : '';
    if (!res.ok) throw new ApiError(res.status, `${method} ${path}: ${res.status} ${errorOf(json) ?? res.statusText}${hint}`);
    return json;
  };
  return { get: (p) => call('GET', p), post: (p, b) => call('POST', p, b) };
}
