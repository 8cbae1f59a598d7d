import { createHash, timingSafeEqual } from 'node:crypto';

// Is this one of the configured tokens? Tokens are hashed once; each candidate is hashed and
// compared in constant time against every configured token, so neither the content nor the
// length of a token leaks through timing.

const digest = (v: string): Buffer => createHash('sha256').update(v, 'utf8').digest();

export function tokenMatcher(tokens: readonly string[]): (candidate: string) => boolean {
  const expected = tokens.map(digest);
  return (candidate) => {
    const given = digest(candidate);
    let ok = false;
    for (const e of expected) ok = timingSafeEqual(e, given) || ok;
    return ok;
  };
}
