// Output of a host command, kept up to a byte limit. A command that floods stdout must not grow
// the agent's memory or a job result without bound; the head is what parsers and humans need, and
// the count of dropped bytes says that something was cut.

export class CappedText {
  readonly #limit: number;
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #dropped = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  push(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const room = this.#limit - this.#kept;
    if (room > 0) {
      const part = buf.subarray(0, room);
      this.#chunks.push(part);
      this.#kept += part.length;
    }
    this.#dropped += Math.max(0, buf.length - Math.max(room, 0));
  }

  get dropped(): number {
    return this.#dropped;
  }

  toString(): string {
    const text = Buffer.concat(this.#chunks).toString('utf8');
    return this.#dropped > 0 ? `${text}\n[... ${this.#dropped} more bytes dropped]` : text;
  }
}

/** A short excerpt for a job result: the head and the tail, where errors usually are. */
export function excerpt(text: string, max = 2048): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[... ${text.length - 2 * half} characters ...]\n${text.slice(-half)}`;
}
