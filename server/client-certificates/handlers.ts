// The ClientCertificates operations of the contract: upload (read and checked by parse.ts,
// the key sealed before it is stored), list, get and delete, each within the project. No
// answer carries the key, the bundle or the passphrase.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { CertificateError, distinguishedName, readClientCertificate } from './parse.js';
import { sealBundle } from './sealed.js';
import * as store from './store.js';

export type ClientCertificateOperation = 'uploadClientCertificate' | 'listClientCertificates' | 'getClientCertificate' | 'deleteClientCertificate';

const NOT_FOUND = 'Client certificate not found';

export function clientCertificateHandlers({ db, secrets }: { db: Db; secrets: Secrets }): Pick<AppHandlers, ClientCertificateOperation> {
  const resource = (row: store.ClientCertificateRow): components['schemas']['ClientCertificate'] => ({
    id: row.id,
    name: row.name,
    origin: row.origin,
    format: row.format,
    subject: row.subject,
    issuer: row.issuer,
    not_before: row.not_before.toISOString(),
    not_after: row.not_after.toISOString(),
    fingerprint_sha256: row.fingerprint_sha256,
    created_at: row.created_at.toISOString(),
  });

  return {
    async uploadClientCertificate(req, ctx) {
      const origin = httpsOrigin(req.body.origin);
      if (!origin) return fail(400, 'origin must be an https origin: https://host or https://host:port, without a path or a wildcard');
      const id = randomUUID();
      let material;
      try {
        material = await readClientCertificate(Buffer.from(await req.body.file.arrayBuffer()), req.body.passphrase, id);
      } catch (err) {
        if (err instanceof CertificateError) return fail(400, err.message);
        throw err;
      }
      const { leaf } = material;
      const row = await store.insertClientCertificate(db, {
        id,
        project_id: ctx.projectId,
        name: req.body.name,
        origin,
        format: material.format,
        subject: distinguishedName(leaf.subject),
        issuer: distinguishedName(leaf.issuer),
        not_before: new Date(leaf.validFrom),
        not_after: new Date(leaf.validTo),
        fingerprint_sha256: leaf.fingerprint256,
        certificate_pem: material.certificatePem,
        sealed_bundle: sealBundle(secrets, id, material.bundle),
      });
      return { status: 200, body: { data: resource(row) } };
    },

    async listClientCertificates(req, ctx) {
      const { page = 1, limit = 20 } = req.query;
      const { rows, total } = await store.listClientCertificates(db, ctx.projectId, { page, limit });
      return { status: 200, body: { data: rows.map(resource), pagination: { page, limit, total, total_pages: Math.ceil(total / limit) } } };
    },

    async getClientCertificate(req, ctx) {
      const row = await store.getClientCertificate(db, ctx.projectId, req.params.id);
      return row ? { status: 200, body: { data: resource(row) } } : fail(404, NOT_FOUND);
    },

    async deleteClientCertificate(req, ctx) {
      if (!(await store.deleteClientCertificate(db, ctx.projectId, req.params.id))) return fail(404, NOT_FOUND);
      return { status: 200, body: { data: { status: 'deleted' } } };
    },
  };
}

/** `https://host[:port]` as URL writes it (the default port left out), or undefined. */
export function httpsOrigin(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'https:' || !u.hostname || u.hostname.includes('*') || u.username || u.password) return undefined;
  // Only an origin; its host in lower case (or punycode), a default port left out.
  if (u.pathname !== '/' || u.search || u.hash || /^https:\/\/[^/]*\/./.test(value)) return undefined;
  return u.origin;
}
