import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonBody } from '../../../../src/control/http/json-body.ts';
import { errorHandler } from '../../../../src/control/http/error-answers.ts';
import { createLogger } from '../../../../src/adapters/observability/logger.ts';

// The lean JSON reader of the /v1 routes (issue 8) against a real HTTP server: the common case
// (identity, UTF-8) read by it, everything else handed to express.json, and the errors the
// receiver maps to 400/413 the same either way.

const LIMIT = 64;

function send(
  url: string,
  body: Buffer | string | undefined,
  headers: Record<string, string> = {},
  chunked = false,
  method = 'POST',
): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    if (body === undefined) return req.end();
    if (chunked) {
      // No Content-Length: node sends Transfer-Encoding: chunked, in pieces.
      const b = Buffer.from(body);
      for (let i = 0; i < b.length; i += 16) req.write(b.subarray(i, i + 16));
      return req.end();
    }
    req.setHeader('content-length', Buffer.byteLength(body));
    req.end(body);
  });
}

describe('jsonBody', () => {
  let url = '';
  let close = (): void => {};
  beforeAll(async () => {
    const app = express();
    app.all('/echo', jsonBody(LIMIT), (req, res) => res.status(200).json({ body: req.body === undefined ? '(none)' : req.body }));
    app.use(errorHandler(createLogger('test', 'silent'), () => {}));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/echo`;
    close = () => server.close();
  });
  afterAll(() => close());

  it('parses a UTF-8 body, with or without a charset, sent whole or chunked', async () => {
    expect(await send(url, '{"a":"ä"}', { 'content-type': 'application/json' })).toEqual({ status: 200, json: { body: { a: 'ä' } } });
    expect(await send(url, '{"a":1}', { 'content-type': 'application/json; charset=UTF-8' })).toEqual({
      status: 200,
      json: { body: { a: 1 } },
    });
    expect(await send(url, '[1,2,3]', {}, true)).toEqual({ status: 200, json: { body: [1, 2, 3] } });
  });

  it('drops a byte order mark and reads an empty body as {}, as body-parser does', async () => {
    expect(await send(url, '\ufeff{"a":1}')).toEqual({ status: 200, json: { body: { a: 1 } } });
    expect(await send(url, '')).toEqual({ status: 200, json: { body: {} } });
  });

  it('leaves req.body unset when the request has no body at all (no Content-Length, no Transfer-Encoding)', async () => {
    expect(await send(url, undefined, {}, false, 'GET')).toEqual({ status: 200, json: { body: '(none)' } });
  });

  it('answers 400 for JSON that does not parse', async () => {
    expect(await send(url, '{"a":')).toMatchObject({ status: 400, json: { error: 'body is not valid JSON' } });
  });

  it('answers 413 past the limit, by Content-Length and while reading a chunked body, and the connection still answers', async () => {
    const big = JSON.stringify({ x: 'y'.repeat(LIMIT) });
    expect(await send(url, big)).toMatchObject({ status: 413, json: { error: `body is larger than the limit of ${LIMIT} bytes` } });
    expect(await send(url, big, {}, true)).toMatchObject({ status: 413 });
    expect(await send(url, '{"ok":true}')).toEqual({ status: 200, json: { body: { ok: true } } });
  });

  it('hands a compressed body or another charset to express.json', async () => {
    expect(await send(url, gzipSync('{"z":1}'), { 'content-encoding': 'gzip' })).toEqual({ status: 200, json: { body: { z: 1 } } });
    expect(await send(url, Buffer.from('{"l":"\xe9"}', 'latin1'), { 'content-type': 'application/json; charset=latin1' })).toMatchObject({
      status: 415,
    });
    expect(await send(url, Buffer.from('{"l":"\xe9"}', 'utf16le'), { 'content-type': 'application/json; charset=utf-16le' })).toEqual({
      status: 200,
      json: { body: { l: 'é' } },
    });
  });
});
