// What every subcommand shares: the options it is given, where it prints, and how it builds
// the API's paths.

export interface Opts {
  json: boolean;
  why?: string;
  node?: string;
  state?: string;
  runbook?: string;
  limit?: string;
  source?: string;
  path?: string;
  force?: boolean;
  all?: boolean;
  sort?: string;
}

export type Out = (text: string) => void;

export const q = (params: Record<string, string | undefined>): string => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
};
export const enc = encodeURIComponent;
/** Who asks is the token's user, recorded by the receiver; only why is ours to say. */
export const asked = (o: Opts) => (o.why ? { why: o.why } : {});

export class UsageError extends Error {
  override name = 'UsageError';
}
