// deploy/kubernetes/: every manifest valid against the Kubernetes API's schemas (the
// kubernetes-models package, compiled from the API's OpenAPI definitions; offline), and what
// the manifests promise each other: probes on /healthz, a grace period covering preStop and
// the drain, non-root as the image's uid, every variable a setting of the server, memory
// requests that cover bench/RESULTS.md's measured memory per session. No cluster runs here.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SETTINGS } from '../server/config/settings.js';

const dir = fileURLToPath(new URL('../deploy/kubernetes/', import.meta.url));
const require = createRequire(import.meta.url);

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};
const manifests: { file: string; doc: Manifest }[] = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) => parseAllDocuments(readFileSync(dir + file, 'utf8')).map((d) => ({ file, doc: d.toJS() as Manifest })));
const of = (kind: string) => manifests.find((m) => m.doc.kind === kind)!.doc;

/** The model class of a kind: kubernetes-models/<group>/<version>/<Kind> (core: v1/<Kind>). */
function model(apiVersion: string, kind: string): new (o: unknown) => { validate(): void } {
  return (require(`kubernetes-models/${apiVersion}/${kind}`) as Record<string, new (o: unknown) => { validate(): void }>)[kind];
}

/** deploy/kubernetes sizes memory for this: `pnpm test:image` measures it in the container. */
function measuredMiB(): { idle: number; perSession: number } {
  const results = readFileSync(fileURLToPath(new URL('../bench/RESULTS.md', import.meta.url)), 'utf8');
  const m = [...results.matchAll(/memory: idle (\d+) MiB, .*?\+(\d+) MiB a session/g)].at(-1);
  if (!m) throw new Error('bench/RESULTS.md has no "memory: idle N MiB, ... +N MiB a session" line of pnpm test:image');
  return { idle: Number(m[1]), perSession: Number(m[2]) };
}
const mebibytes = (q: string) => Number(/^(\d+)(Mi|Gi)$/.exec(q)![1]) * (q.endsWith('Gi') ? 1024 : 1);

describe('deploy/kubernetes', () => {
  it('has the Deployment, Service, PodDisruptionBudget, ConfigMap and Secret', () => {
    expect(manifests.map((m) => m.doc.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Secret', 'Service']);
  });

  for (const { file, doc } of manifests) {
    it(`${file}: ${doc.kind} is valid against the Kubernetes schema`, () => {
      expect(() => new (model(doc.apiVersion, doc.kind))(doc).validate()).not.toThrow();
    });
  }

  it('the schemas refuse a wrong manifest (so the check above can fail)', () => {
    const bad = structuredClone(of('Deployment'));
    bad.spec.template.spec.containers[0].readinessProbe.httpGet.port = { name: 'http' };
    expect(() => new (model('apps/v1', 'Deployment'))(bad).validate()).toThrow(/port/);
  });

  it('probes /healthz, drains within the grace period, runs as the unprivileged uid', () => {
    const pod = of('Deployment').spec.template.spec;
    const [c] = pod.containers;
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) expect(c[probe].httpGet.path).toBe('/healthz');
    const preStop = Number(c.lifecycle.preStop.exec.command.at(-1));
    const drain = Number(of('ConfigMap').data!.SHUTDOWN_GRACE_SECONDS);
    // After the drain the node ends what still runs (recordings encoded): 30 s of margin.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStop + drain + 30);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 });
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(readFileSync(fileURLToPath(new URL('../Dockerfile', import.meta.url)), 'utf8')).toContain('USER 10001:10001');
  });

  it('requests the memory of MAX_CONCURRENT_BROWSERS sessions as measured in the image', () => {
    const { idle, perSession } = measuredMiB();
    const sessions = Number(of('ConfigMap').data!.MAX_CONCURRENT_BROWSERS);
    const { requests, limits } = of('Deployment').spec.template.spec.containers[0].resources;
    expect(mebibytes(requests.memory)).toBeGreaterThanOrEqual(idle + sessions * perSession);
    expect(mebibytes(limits.memory)).toBeGreaterThan(mebibytes(requests.memory));
  });

  it('passes only settings of the server (and the pod address it builds NODE_INTERNAL_URL from)', () => {
    const names = [...Object.keys(of('ConfigMap').data!), ...Object.keys(of('Secret').stringData!)];
    const env = of('Deployment').spec.template.spec.containers[0].env.map((e: { name: string }) => e.name);
    for (const name of [...names, ...env].filter((n) => n !== 'POD_IP')) expect(Object.keys(SETTINGS), name).toContain(name);
    expect(names).toEqual(expect.arrayContaining(['DATABASE_URL', 'SECRETS_KEY', 'CLUSTER_SECRET', 'STORAGE_URL', 'PUBLIC_URL']));
  });
});
