// Client certificates: G9 for the family (upload → get → delete → get answers 404), the
// description answered without the key or the passphrase (CC1), the refusals of what is not
// a usable client certificate (CC2), and a session presenting it, without a prompt, to an
// HTTPS page of the suite's own that requires it (CC3). CC1 leaves one certificate alive for
// G11, which runs after the rule modules; the suite's cleanup deletes it.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { chromium } from 'playwright-core';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest, type FilePart } from '../requests.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

// A throwaway self-signed client certificate (EC P-256, valid until 2126, not a CA: Chromium
// presents no CA certificate as a client's) and its key, made for this suite with openssl:
// public test material, it opens nothing.
const CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIB2jCCAYGgAwIBAgIUVE9KwjdFFlRHlTny0sUSf5z1hjwwCgYIKoZIzj0EAwIw
OTEbMBkGA1UEAwwSQ29uZm9ybWFuY2UgQ2xpZW50MRowGAYDVQQKDBFDb25mb3Jt
YW5jZSBTdWl0ZTAgFw0yNjExMjUxNTAzMjhaGA8yMTI2MTEwMTE1MDMyOFowOTEb
MBkGA1UEAwwSQ29uZm9ybWFuY2UgQ2xpZW50MRowGAYDVQQKDBFDb25mb3JtYW5j
ZSBTdWl0ZTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABPdAr8ogtUF6kBDguR+D
m27t4M53n6pWOPWoKz4JAU8t4Utu0+0Jw7wy1SLpRkv9/TmTvn+nApEfR0Y2mQfE
PTijZTBjMB0GA1UdDgQWBBTxjnjGqzltuO5vbDB7gTsi/kP+VDAfBgNVHSMEGDAW
gBTxjnjGqzltuO5vbDB7gTsi/kP+VDAMBgNVHRMBAf8EAjAAMBMGA1UdJQQMMAoG
CCsGAQUFBwMCMAoGCCqGSM49BAMCA0cAMEQCIDUKt9feLf2IOP3GSVqjM1prt+Cu
LYoF7SWlcuPE/8EEAiBlQhB5woldCm5NbGqeHEJBuruxVT97e+AiRCcZFGMKCw==
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgi46gclJWuBZEUQsX
YbennOo78g95VrdrlfDB+UFrcSGhRANCAAT3QK/KILVBepAQ4Lkfg5tu7eDOd5+q
Vjj1qCs+CQFPLeFLbtPtCcO8MtUi6UZL/f05k75/pwKRH0dGNpkHxD04
-----END PRIVATE KEY-----
`;
// The page of CC3: its own self-signed certificate (localhost, 127.0.0.1), whose errors the
// check waives.
const SERVER_CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIB5TCCAYygAwIBAgIUCyQpFTWW/k1GlmJYz5EmAPybjBYwCgYIKoZIzj0EAwIw
MDESMBAGA1UEAwwJbG9jYWxob3N0MRowGAYDVQQKDBFDb25mb3JtYW5jZSBTdWl0
ZTAgFw0yNjExMjUxNTAzMjhaGA8yMTI2MTEwMTE1MDMyOFowMDESMBAGA1UEAwwJ
bG9jYWxob3N0MRowGAYDVQQKDBFDb25mb3JtYW5jZSBTdWl0ZTBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABHCVZt1hMgnDquZKRgdT8hJFYaLmLbNY50dm+FFZKaE6
2ptc2aQDmswZHxQQ9/6SPfMhGbU2cbxqaPHjNR8pmi6jgYEwfzAdBgNVHQ4EFgQU
2nDXMBwLbrTeRTdml8ecHdER3WQwHwYDVR0jBBgwFoAU2nDXMBwLbrTeRTdml8ec
HdER3WQwDAYDVR0TAQH/BAIwADAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEw
EwYDVR0lBAwwCgYIKwYBBQUHAwEwCgYIKoZIzj0EAwIDRwAwRAIgWjBHEB7FSKng
iyuOxV8+eNcj8uMqGtp1XTmEgD8GC7YCIEKfUBSvioURIJz63skAg/NeHO+9fNo6
BvjyTa1Datck
-----END CERTIFICATE-----
`;
const SERVER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQggWBRseyTQECCXjh6
Xe+OKZyUginZicn8rAGcHukhXUShRANCAARwlWbdYTIJw6rmSkYHU/ISRWGi5i2z
WOdHZvhRWSmhOtqbXNmkA5rMGR8UEPf+kj3zIRm1NnG8amjx4zUfKZou
-----END PRIVATE KEY-----
`;
// A key that belongs to no certificate here.
const STRAY_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg1aTx8NEMW7N5FJmO
aAREaDkN7gwKnk5vNaGC0NYWAyihRANCAAS6G/oQti6Ol+MQsJ+XLzGbgv8OeSjL
Wp3mkbYg8uEAR8i0Tpd1dttM1dQIgLPjHIudBEv3e2ESSOpjTSGVAFiV
-----END PRIVATE KEY-----
`;

const ORIGIN = 'https://client-cert.conformance.example';
/** Cheap sessions: no window, no recording, and ended by the server if a check cannot end them. */
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout: { idle_timeout: 2, max_duration: 5 } } };

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const pem = (text: string): FilePart => ({ file: true, filename: 'client.pem', type: 'application/x-pem-file', bytes: new TextEncoder().encode(text) });
const keyBody = (text: string) =>
  text
    .split('\n')
    .filter((l) => l && !l.startsWith('-----'))
    .join('');

export default defineRules((ctx: SuiteContext) => {
  const uploadOp = ctx.contract.operation('uploadClientCertificate');
  const listOp = ctx.contract.operation('listClientCertificates');
  const getOp = ctx.contract.operation('getClientCertificate');
  const deleteOp = ctx.contract.operation('deleteClientCertificate');

  const upload = async (fields: Record<string, unknown>) => ctx.call(await ctx.build(uploadOp), { bodyValue: fields });
  const get = async (id: string) => ctx.call(await ctx.build(getOp, { pathParams: { id } }));
  const remove = async (id: string) => ctx.call(await ctx.build(deleteOp, { pathParams: { id } }));
  const name = (rule: string) => `conformance-${rule}-${randomBytes(4).toString('hex')}`;

  /** Uploads the suite's certificate; skips when the server does not implement the family. */
  const created = async (t: T, rule: string, passphrase?: string): Promise<{ id: string; ex: Exchange }> => {
    const ex = await upload({ name: name(rule), origin: ORIGIN, file: pem(CERTIFICATE + KEY), ...(passphrase ? { passphrase } : {}) });
    const res = answer(t, ex);
    if (res.status === 501) t.skip('client certificates are not implemented by this server (501)');
    t.assert(res.status === 200, line(ex.request, res, 300));
    const id = (res.json as { data?: { id?: string } }).data?.id;
    t.assert(typeof id === 'string', `upload answered no id: ${line(ex.request, res, 300)}`);
    return { id, ex };
  };

  const createSessionOp = ctx.contract.operation('createSession');
  const endSessionOp = ctx.contract.operation('endSession');

  return [
    check(
      "CC3 a session presents the project's client certificate, without a prompt, to the origin it was uploaded for: a page that requires it loads over cdp_url",
      async (t: T) => {
        // Beside the fixture server, which the server under test reaches (--fixtures-url), with a
        // certificate of its own (its errors are waived below: trusting a server's CA is not this
        // family's); the suite's client certificate is the only one it accepts.
        const fixtures = new URL(await ctx.fixtures.url('/'));
        const local = fixtures.hostname === '127.0.0.1' || fixtures.hostname === 'localhost';
        const seen: string[] = [];
        const site = createServer({ key: SERVER_KEY, cert: SERVER_CERTIFICATE, ca: CERTIFICATE, requestCert: true, rejectUnauthorized: true }, (req, res) => {
          const cn = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? '');
          seen.push(cn);
          res.setHeader('content-type', 'text/html');
          res.end(`<!doctype html><title>CC3</title><h1 id="who">${cn}</h1>`);
        });
        site.on('tlsClientError', () => {});
        await new Promise<void>((r) => site.listen(0, local ? '127.0.0.1' : '0.0.0.0', r));
        const origin = `https://${fixtures.hostname}:${(site.address() as AddressInfo).port}`;
        let sessionId: string | undefined;
        try {
          const up = await upload({ name: name('cc3'), origin, file: pem(CERTIFICATE + KEY) });
          const made = answer(t, up);
          if (made.status === 501) t.skip('client certificates are not implemented by this server (501)');
          t.assert(made.status === 200, line(up.request, made, 300));
          const sx = await ctx.call(await ctx.build(createSessionOp), { bodyValue: HEADLESS });
          const sres = answer(t, sx);
          t.assert(sres.status === 200, `POST /v1/sessions answered ${line(sx.request, sres, 300)}`);
          const session = (sres.json as { data: { id: string; cdp_url: string } }).data;
          sessionId = session.id;
          const browser = await chromium.connectOverCDP(session.cdp_url, { timeout: 30_000 });
          try {
            const cdp = await browser.newBrowserCDPSession();
            await cdp.send('Security.setIgnoreCertificateErrors', { ignore: true });
            const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
            let outcome: string;
            try {
              await page.goto(origin, { timeout: 20_000 });
              outcome = `page: ${await page.textContent('#who')}`;
            } catch (err) {
              outcome = `error: ${(err as Error).message.split('\n')[0]}`;
            }
            t.equal(outcome, 'page: Conformance Client', `the page at ${origin} (it answers only to the certificate)`);
          } finally {
            await browser.close().catch(() => {});
          }
          t.assert(seen.length > 0 && seen.every((cn) => cn === 'Conformance Client'), `the page saw ${JSON.stringify(seen)}`);
          t.note(`${origin}: ${seen.length} request(s) with the certificate`);
        } finally {
          if (sessionId) await ctx.call(buildRequest(ctx.contract, endSessionOp, { pathParams: { session_id: sessionId } }));
          site.closeAllConnections();
          await new Promise<void>((r) => site.close(() => r()));
        }
      },
    ),

    check('G9 client certificates: create → get → delete → get answers 404', async (t: T) => {
      const { id } = await created(t, 'g9');
      const got = await get(id);
      t.assert(answer(t, got).status === 200, line(got.request, got.response!, 300));
      t.equal((got.response!.json as { data?: { id?: string } }).data?.id, id, 'GET answers the certificate uploaded');
      const gone = await remove(id);
      t.assert(answer(t, gone).status === 200, line(gone.request, gone.response!, 300));
      const after = await get(id);
      t.assert(answer(t, after).status === 404, `after DELETE: ${line(after.request, after.response!, 300)}`);
      const again = await remove(id);
      t.assert(answer(t, again).status === 404, `DELETE again: ${line(again.request, again.response!, 300)}`);
    }),

    check(
      'CC1 an uploaded client certificate is described (subject, issuer, validity, origin) in the upload, get and list answers, never with its key or passphrase',
      async (t: T) => {
        const passphrase = `conformance-${randomBytes(8).toString('hex')}`;
        // An unencrypted key with a passphrase given: the passphrase is not needed, and not kept.
        const { id, ex } = await created(t, 'cc1', passphrase);
        const got = await get(id);
        const listed = await ctx.call(await ctx.build(listOp));
        const answers = [ex, got, listed].map((e) => answer(t, e));
        for (const [i, op] of [uploadOp, getOp, listOp].entries()) {
          const v = bodyVerdict(ctx.contract, op, answers[i]!);
          t.assert(v.kind !== 'fail', v.kind === 'fail' ? `${op.id}: ${v.message}` : '');
        }
        const description = (answers[1]!.json as { data: Record<string, unknown> }).data;
        t.equal(
          { origin: description.origin, subject: description.subject, issuer: description.issuer, not_after: String(description.not_after).slice(0, 4) },
          { origin: ORIGIN, subject: 'CN=Conformance Client, O=Conformance Suite', issuer: 'CN=Conformance Client, O=Conformance Suite', not_after: '2126' },
          'the description of the certificate',
        );
        const list = answers[2]!.json as { data?: { id: string }[] };
        t.assert(
          list.data?.some((c) => c.id === id),
          `the certificate ${id} is not listed`,
        );
        for (const res of answers) {
          const text = res.text ?? JSON.stringify(res.json);
          t.assert(!text.includes(passphrase), 'an answer carries the passphrase');
          t.assert(!text.includes(keyBody(KEY).slice(0, 40)), 'an answer carries the private key');
          t.assert(!/PRIVATE KEY|pkcs12|sealed/i.test(text.replace(/"format":"pkcs12"/g, '')), `an answer carries key material: ${text.slice(0, 300)}`);
        }
        t.note(`left alive for G11: ${id}`);
      },
    ),

    check(
      'CC2 what is not a usable client certificate answers 400: not a certificate, no key, a key of another certificate, bytes that are no PKCS#12 file, an origin that is not https',
      async (t: T) => {
        const cases: [string, Record<string, unknown>][] = [
          ['not a certificate', { file: pem('this is not a certificate\n') }],
          ['a certificate without its key', { file: pem(CERTIFICATE) }],
          ['a key of another certificate', { file: pem(CERTIFICATE + STRAY_KEY) }],
          [
            'bytes that are no PKCS#12 file',
            { file: { file: true, filename: 'client.p12', type: 'application/x-pkcs12', bytes: new Uint8Array(randomBytes(600)) }, passphrase: 'wrong' },
          ],
          ['an http origin', { file: pem(CERTIFICATE + KEY), origin: 'http://client-cert.conformance.example' }],
        ];
        for (const [what, fields] of cases) {
          const ex = await upload({ name: name('cc2'), origin: ORIGIN, ...fields });
          const res = answer(t, ex);
          if (res.status === 501) t.skip('client certificates are not implemented by this server (501)');
          t.assert(res.status === 400, `${what}: ${line(ex.request, res, 300)}`);
          const message = (res.json as { error?: { message?: string } }).error?.message;
          t.assert(typeof message === 'string' && message.length > 0, `${what}: no error message`);
        }
      },
    ),
  ];
});
