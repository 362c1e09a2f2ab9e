// Certificates in sessions. Client certificates: TLS client certificates a project uploads
// (handlers.ts), each for one origin, presented without a prompt by the project's sessions
// when that origin asks for one. CA certificates (ca-handlers.ts): private CAs the project's
// sessions trust. At every launch of a session of a project that has either, the launching
// hook imports them into the session's own NSS database (nssdb.ts) and names, for each
// origin, the client certificate to present (browser/auto-select-certificates.ts says why a
// profile rule and not the machine-wide policy). Chromium reads both only when it starts, so
// those sessions never take a warm pooled browser.
import { X509Certificate } from 'node:crypto';
import { rootPaths, type AutoSelectCertificate, type CertificateNameFilter } from '../browser/index.js';
import type { Capability } from '../capability/index.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { hasCaCertificates, projectCaCertificates } from './ca-store.js';
import { caCertificateHandlers, type CaCertificateOperation } from './ca-handlers.js';
import { clientCertificateHandlers, type ClientCertificateOperation } from './handlers.js';
import { importIntoNssDb } from './nssdb.js';
import { nameAttributes } from './parse.js';
import { openBundle } from './sealed.js';
import { hasClientCertificates, projectClientCertificates } from './store.js';

export function clientCertificates(d: { db: Db; secrets: Secrets }): Capability<ClientCertificateOperation | CaCertificateOperation> {
  return {
    name: 'client-certificates',
    handlers: { ...clientCertificateHandlers(d), ...caCertificateHandlers(d) },
    sessionHooks: {
      coldLaunch: async (projectId) => (await hasClientCertificates(d.db, projectId)) || (await hasCaCertificates(d.db, projectId)),
      async launching(s) {
        // An expired certificate is refused by the sites anyway, and Chromium's rule cannot
        // tell it from its renewal (same subject, same issuer): it is left out.
        const now = Date.now();
        const [all, authorities] = await Promise.all([projectClientCertificates(d.db, s.projectId), projectCaCertificates(d.db, s.projectId)]);
        const rows = all.filter((r) => r.not_after.getTime() > now);
        if (rows.length === 0 && authorities.length === 0) return undefined;
        const paths = rootPaths(s.rootDir);
        await importIntoNssDb(
          paths.home,
          paths.tmp,
          rows.map((r) => openBundle(d.secrets, r.id, r.sealed_bundle)),
          authorities.map((a) => ({ name: a.name, pem: a.certificate_pem })),
        );
        return { autoSelectCertificates: rows.map((r) => ({ origin: r.origin, filters: [filterFor(r.certificate_pem)] })) };
      },
    },
  };
}

/** Subject and issuer, as far as Chromium's filter can tell certificates apart. */
function filterFor(certificatePem: string): AutoSelectCertificate['filters'][number] {
  const leaf = new X509Certificate(certificatePem);
  return { SUBJECT: matchable(leaf.subject), ISSUER: matchable(leaf.issuer) };
}

function matchable(name: string): CertificateNameFilter {
  const a = nameAttributes(name);
  const out: CertificateNameFilter = {};
  for (const k of ['CN', 'O', 'OU', 'L'] as const) if (a[k] !== undefined) out[k] = a[k];
  return out;
}
