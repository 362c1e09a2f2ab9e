// Client certificates: G9 for the family (upload → get → delete → get answers 404), the
// description answered without the key or the passphrase (CC1), and the refusals of what is not
// a usable client certificate (CC2). CC1 leaves one certificate alive for G11, which runs
// after the rule modules; the suite's cleanup deletes it.
import { randomBytes } from 'node:crypto';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import type { FilePart } from '../requests.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

// A throwaway self-signed client certificate (EC P-256, valid until 2126) and its key, made
// for this suite with openssl: public test material, it opens nothing.
const CERTIFICATE = `-----BEGIN CERTIFICATE-----
MIIB3jCCAYSgAwIBAgIUdS9nYUwn2d3POQpUKoPn0rPAvmAwCgYIKoZIzj0EAwIw
OTEbMBkGA1UEAwwSQ29uZm9ybWFuY2UgQ2xpZW50MRowGAYDVQQKDBFDb25mb3Jt
YW5jZSBTdWl0ZTAgFw0yNjExMjUxNDM1MDJaGA8yMTI2MTEwMTE0MzUwMlowOTEb
MBkGA1UEAwwSQ29uZm9ybWFuY2UgQ2xpZW50MRowGAYDVQQKDBFDb25mb3JtYW5j
ZSBTdWl0ZTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABGQcnbhnALoSzbjpiMCQ
F69o7A08iWXsE0hdVMTHl75+cPFX07rOxr+aSBHRwM1XHArWo2age4Y6TIgN6Ivx
8jSjaDBmMB0GA1UdDgQWBBRKaWFqBXg/HZnV7Sj9p9XAFDHmFjAfBgNVHSMEGDAW
gBRKaWFqBXg/HZnV7Sj9p9XAFDHmFjAPBgNVHRMBAf8EBTADAQH/MBMGA1UdJQQM
MAoGCCsGAQUFBwMCMAoGCCqGSM49BAMCA0gAMEUCIQCVj75FiNHf51C1PsV//IM8
O5a8AuPxGQm48kESN4YGRgIgdqSxyMkSL8dFgQt9/bIG2FPv7lHEtAJp0ZIetwa/
f5Y=
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgkDt07LlSEuEc/Tb8
bKjnDwAQuI0n/CZbxs4/tp6mPQGhRANCAARkHJ24ZwC6Es246YjAkBevaOwNPIll
7BNIXVTEx5e+fnDxV9O6zsa/mkgR0cDNVxwK1qNmoHuGOkyIDeiL8fI0
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

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const pem = (text: string): FilePart => ({ file: true, filename: 'client.pem', type: 'application/x-pem-file', bytes: new TextEncoder().encode(text) });
const keyBody = (text: string) => text.split('\n').filter((l) => l && !l.startsWith('-----')).join('');

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

  return [
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

    check('CC1 an uploaded client certificate is described (subject, issuer, validity, origin) in the upload, get and list answers, never with its key or passphrase', async (t: T) => {
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
      t.assert(list.data?.some((c) => c.id === id), `the certificate ${id} is not listed`);
      for (const res of answers) {
        const text = res.text ?? JSON.stringify(res.json);
        t.assert(!text.includes(passphrase), 'an answer carries the passphrase');
        t.assert(!text.includes(keyBody(KEY).slice(0, 40)), 'an answer carries the private key');
        t.assert(!/PRIVATE KEY|pkcs12|sealed/i.test(text.replace(/"format":"pkcs12"/g, '')), `an answer carries key material: ${text.slice(0, 300)}`);
      }
      t.note(`left alive for G11: ${id}`);
    }),

    check('CC2 what is not a usable client certificate answers 400: not a certificate, no key, a key of another certificate, bytes that are no PKCS#12 file, an origin that is not https', async (t: T) => {
      const cases: [string, Record<string, unknown>][] = [
        ['not a certificate', { file: pem('this is not a certificate\n') }],
        ['a certificate without its key', { file: pem(CERTIFICATE) }],
        ['a key of another certificate', { file: pem(CERTIFICATE + STRAY_KEY) }],
        ['bytes that are no PKCS#12 file', { file: { file: true, filename: 'client.p12', type: 'application/x-pkcs12', bytes: new Uint8Array(randomBytes(600)) }, passphrase: 'wrong' }],
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
    }),
  ];
});
