// The captcha-solving adapter against a local server speaking the vendor protocol
// (createTask / getTaskResult), the way the paid service would answer.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaptchaServiceClient, CaptchaServiceError, taskType } from './captcha-adapter.js';

const KEY = 'client-key-abcdef';
let stub: Server;
let base: string;
const received: { path: string; body: any }[] = [];

beforeAll(async () => {
  const polls = new Map<number, number>();
  stub = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    received.push({ path: req.url ?? '', body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/broken/createTask') return res.writeHead(500).end('oops');
    if (body.clientKey !== KEY)
      return res.end(JSON.stringify({ errorId: 1, errorCode: 'ERROR_KEY_DOES_NOT_EXIST', errorDescription: 'Account authorization key not found' }));
    if (req.url === '/createTask') {
      if (body.task.websiteKey === 'unsolvable') return res.end(JSON.stringify({ errorId: 0, taskId: 2 }));
      if (body.task.websiteKey === 'slow') return res.end(JSON.stringify({ errorId: 0, taskId: 3 }));
      return res.end(JSON.stringify({ errorId: 0, taskId: 1 }));
    }
    if (req.url === '/getTaskResult') {
      const n = (polls.get(body.taskId) ?? 0) + 1;
      polls.set(body.taskId, n);
      if (body.taskId === 2)
        return res.end(JSON.stringify({ errorId: 12, errorCode: 'ERROR_CAPTCHA_UNSOLVABLE', errorDescription: 'Captcha could not be solved' }));
      if (n < 3 || body.taskId === 3) return res.end(JSON.stringify({ errorId: 0, status: 'processing' }));
      return res.end(JSON.stringify({ errorId: 0, status: 'ready', solution: body.taskId === 1 ? { gRecaptchaResponse: 'TOKEN-1' } : { token: 'X' } }));
    }
    res.end(JSON.stringify({ errorId: 16, errorCode: 'ERROR_NO_SUCH_CAPCHA_ID' }));
  });
  await new Promise<void>((r) => stub.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => stub.close(() => r())));

describe('CaptchaServiceClient', () => {
  it('creates a task, polls until ready and answers the token', async () => {
    received.length = 0;
    const client = new CaptchaServiceClient({ url: `${base}/`, clientKey: KEY, pollIntervalMs: 20 });
    const token = await client.solve(
      { kind: 'recaptcha_v2', websiteURL: 'https://example.org/login', websiteKey: 'site-key' },
      { deadline: Date.now() + 5000 },
    );
    expect(token).toBe('TOKEN-1');
    expect(received[0]).toEqual({
      path: '/createTask',
      body: { clientKey: KEY, task: { type: 'RecaptchaV2TaskProxyless', websiteURL: 'https://example.org/login', websiteKey: 'site-key' } },
    });
    expect(received.slice(1).map((r) => r.body)).toEqual([1, 2, 3].map(() => ({ clientKey: KEY, taskId: 1 })));
  });

  it('names the protocol task types', () => {
    expect(['recaptcha_v2', 'recaptcha_v3', 'hcaptcha', 'turnstile'].map((k) => taskType(k as never))).toEqual([
      'RecaptchaV2TaskProxyless',
      'RecaptchaV3TaskProxyless',
      'HCaptchaTaskProxyless',
      'TurnstileTaskProxyless',
    ]);
  });

  it('reports service errors without the client key', async () => {
    const wrong = new CaptchaServiceClient({ url: base, clientKey: 'wrong-key-123456', pollIntervalMs: 20 });
    const err = await wrong.solve({ kind: 'hcaptcha', websiteURL: 'https://x.org', websiteKey: 'k' }, { deadline: Date.now() + 5000 }).catch((e) => e);
    expect(err).toBeInstanceOf(CaptchaServiceError);
    expect(err.message).toContain('ERROR_KEY_DOES_NOT_EXIST');
    expect(err.message).not.toContain('wrong-key-123456');
    const unsolvable = new CaptchaServiceClient({ url: base, clientKey: KEY, pollIntervalMs: 20 });
    await expect(
      unsolvable.solve({ kind: 'turnstile', websiteURL: 'https://x.org', websiteKey: 'unsolvable' }, { deadline: Date.now() + 5000 }),
    ).rejects.toThrow(/ERROR_CAPTCHA_UNSOLVABLE/);
    const broken = new CaptchaServiceClient({ url: `${base}/broken`, clientKey: KEY });
    await expect(broken.solve({ kind: 'turnstile', websiteURL: 'https://x.org', websiteKey: 'k' }, { deadline: Date.now() + 5000 })).rejects.toThrow(
      /HTTP 500/,
    );
  });

  it('gives up at the deadline', async () => {
    const client = new CaptchaServiceClient({ url: base, clientKey: KEY, pollIntervalMs: 1000 });
    await expect(client.solve({ kind: 'recaptcha_v2', websiteURL: 'https://x.org', websiteKey: 'slow' }, { deadline: Date.now() + 2500 })).rejects.toThrow(
      /in time/,
    );
  });
});
