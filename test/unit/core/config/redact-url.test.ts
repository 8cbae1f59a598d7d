import { describe, expect, it } from 'vitest';
import { redactUrl, redactUrlsIn } from '../../../../src/core/config/redact-url.ts';

describe('hiding the credentials of a URL', () => {
  it('hides the userinfo of a URL value, up to its last @, malformed or not', () => {
    expect(redactUrl('redis://volume-medic-receiver:s3cret@redis:6379')).toBe('redis://***@redis:6379');
    expect(redactUrl('redis://:s3cret@redis:6379/0')).toBe('redis://***@redis:6379/0');
    expect(redactUrl('redis://user:p@ss/w rd@host:notaport')).toBe('redis://***@host:notaport');
    expect(redactUrl('redis:/user:s3cret@host')).toBe('redis:/***@host');
    expect(redactUrl('user:s3cret@host:6379')).toBe('***@host:6379');
    expect(redactUrl('redis://redis:6379')).toBe('redis://redis:6379');
  });

  it("hides every URL's userinfo in free text and leaves the rest", () => {
    expect(redactUrlsIn('connect redis://u:s3cret@a:1 then rediss://v:p@ss@b:2, done')).toBe('connect redis://***@a:1 then rediss://***@b:2, done');
    expect(redactUrlsIn('{"msg":"bad url","url":"redis://u:s3cret@host:x","n":1}')).toBe('{"msg":"bad url","url":"redis://***@host:x","n":1}');
    expect(redactUrlsIn('listening on http://127.0.0.1:8080, mail root@example.org')).toBe('listening on http://127.0.0.1:8080, mail root@example.org');
  });
});
