// The Certificates operations of the contract: CA certificates a project's sessions trust,
// so that they reach services whose TLS certificates a private CA signed (a company's
// internal sites, a TLS-inspecting proxy). Upload (PEM or DER, checked to be a CA), list,
// delete by name.
import { randomUUID, X509Certificate } from 'node:crypto';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Db } from '../store/db.js';
import * as store from './ca-store.js';

export type CaCertificateOperation = 'uploadCaCertificate' | 'listCaCertificates' | 'deleteCaCertificate';

export function caCertificateHandlers({ db }: { db: Db }): Pick<AppHandlers, CaCertificateOperation> {
  const resource = (row: store.CaCertificateRow): components['schemas']['CaCertificate'] => ({
    id: row.id,
    name: row.name,
    description: row.description,
    createdAt: row.created_at.toISOString(),
  });
  return {
    async uploadCaCertificate(req, ctx) {
      const read = readCaCertificate(Buffer.from(await req.body.file.arrayBuffer()));
      if (!read.ok) return fail(400, read.message);
      const row = await store.insertCaCertificate(db, {
        id: randomUUID(),
        project_id: ctx.projectId,
        name: req.body.name,
        description: req.body.description ?? null,
        certificate_pem: read.pem,
      });
      if (!row) return fail(409, `A certificate named ${req.body.name} already exists`);
      return { status: 200, body: { data: resource(row) } };
    },

    async listCaCertificates(_req, ctx) {
      return { status: 200, body: { data: (await store.projectCaCertificates(db, ctx.projectId)).map(resource) } };
    },

    async deleteCaCertificate(req, ctx) {
      if (!(await store.deleteCaCertificate(db, ctx.projectId, req.params.name))) return fail(404, 'CA certificate not found');
      return { status: 200, body: { data: { status: 'deleted' } } };
    },
  };
}

/** One certificate, PEM or DER, that may sign others (basicConstraints CA:TRUE), as PEM. */
export function readCaCertificate(bytes: Buffer): { ok: true; pem: string } | { ok: false; message: string } {
  const text = bytes.toString('latin1');
  const pems = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length > 1) return { ok: false, message: 'The file holds several certificates: upload one CA certificate a file' };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pems[0] ?? bytes);
  } catch {
    return { ok: false, message: 'The file is not an X.509 certificate in PEM or DER form' };
  }
  if (!cert.ca) return { ok: false, message: 'The certificate is not a CA certificate (its basicConstraints do not say CA:TRUE)' };
  if (new Date(cert.validTo).getTime() < Date.now()) return { ok: false, message: `The certificate expired on ${new Date(cert.validTo).toISOString()}` };
  return { ok: true, pem: cert.toString() };
}
