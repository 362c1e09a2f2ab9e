// AD1-AD6: the operator's admin API (/admin/v1, tag Admin). It is the operator's, not a
// project's: these checks need the server's ADMIN_TOKEN (--admin-token) and are skipped,
// saying so, without it. The generic rules leave the admin API out (contract.ts).
//   AD1 a missing or wrong token, or a project's API key, answers 401 with the documented body.
//   AD2 a project is created (201), read, listed and updated, each answer as documented.
//   AD3 a key is shown once: it works, its listing shows its prefix and never the key, and
//       once revoked it answers 401 at once.
//   AD4 a project's limits take the configuration's place: GET /v1/billing with its key
//       shows them, and a cost limit of 0 makes session creation answer 402.
//   AD5 a deleted project is gone (404), and so are its keys (401).
//   AD6 the cluster's nodes are listed as documented, at least one alive; when /healthz
//       names the node that answered it (cluster.node_id: ours does), that node is listed
//       alive (or draining).
import type { Exchange, SuiteContext } from '../context.js';
import type { Operation } from '../contract.js';
import { describe as line, send, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const NO_TOKEN = "no --admin-token: the admin API is the operator's and needs the server's ADMIN_TOKEN";

export default defineRules((ctx: SuiteContext) => {
  if (ctx.contract.adminOperations.length === 0) return [];
  const op = (id: string) => ctx.contract.adminOperation(id);
  const token = () => ctx.options.adminToken;

  const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);
  const answer = (t: T, ex: Exchange): HttpResponse => {
    if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
    return ex.response;
  };
  /** Sends an admin operation with the token (or `as`), and checks the answer is documented. */
  const admin = async (t: T, o: Operation, options: { pathParams?: Record<string, string>; body?: unknown; as?: string; status: number }) => {
    const built = buildRequest(ctx.contract, o, { pathParams: options.pathParams });
    const ex = await ctx.call(built, { key: { value: options.as ?? token() }, ...(options.body !== undefined ? { bodyValue: options.body } : {}) });
    const res = answer(t, ex);
    t.assert(res.status === options.status, `expected ${options.status}: ${show(ex)}`);
    const v = bodyVerdict(ctx.contract, o, res);
    t.assert(
      v.kind === 'pass',
      `the ${res.status} answer is not as documented (${v.kind === 'fail' ? v.message : v.kind === 'skip' ? v.reason : ''}): ${show(ex)}`,
    );
    return res.json as { data: any };
  };
  /** A project operation sent with a given project key. */
  const withKey = async (t: T, id: string, key: string, body?: unknown) => {
    const o = ctx.contract.operation(id);
    const ex = await ctx.call(buildRequest(ctx.contract, o), { key: { value: key }, ...(body !== undefined ? { bodyValue: body } : {}) });
    return { ex, res: answer(t, ex) };
  };
  const needToken = (t: T) => {
    if (!token()) t.skip(NO_TOKEN);
  };
  const newProject = (t: T, body: Record<string, unknown> = {}) =>
    admin(t, op('adminCreateProject'), { body: { name: `conformance-${Date.now().toString(36)}`, ...body }, status: 201 }).then(
      (b) => b.data as { id: string },
    );
  const deleteProject = (t: T, id: string) => admin(t, op('adminDeleteProject'), { pathParams: { project_id: id }, status: 200 });
  const newKey = async (t: T, projectId: string) =>
    (await admin(t, op('adminCreateKey'), { pathParams: { project_id: projectId }, body: { name: 'conformance' }, status: 201 })).data as {
      id: string;
      key: string;
      prefix: string;
    };

  return [
    check('AD1 the admin API refuses a missing or wrong token, and project keys, with 401', async (t: T) => {
      needToken(t);
      const list = op('adminListProjects');
      for (const [what, value] of [
        ['no token', undefined],
        ['a wrong token', `${token()}-wrong`],
        ["the project's API key", ctx.mainKey],
      ] as const) {
        const ex = await ctx.call(buildRequest(ctx.contract, list), { key: { value } });
        const res = answer(t, ex);
        t.assert(res.status === 401, `${what}: ${show(ex)}`);
        const v = bodyVerdict(ctx.contract, list, res);
        t.assert(v.kind === 'pass', `${what}: the 401 body is not as documented: ${show(ex)}`);
      }
    }),

    check('AD2 a project is created, read, listed and updated as documented', async (t: T) => {
      needToken(t);
      const p = await newProject(t, { max_concurrent_browsers: 3 });
      try {
        const got = await admin(t, op('adminGetProject'), { pathParams: { project_id: p.id }, status: 200 });
        t.equal(got.data, p, 'GET answers the project POST made');
        const all = await admin(t, op('adminListProjects'), { status: 200 });
        t.assert(
          all.data.some((x: { id: string }) => x.id === p.id),
          'the list holds the new project',
        );
        const patched = await admin(t, op('adminUpdateProject'), {
          pathParams: { project_id: p.id },
          body: { name: 'conformance-renamed', max_concurrent_browsers: null },
          status: 200,
        });
        t.equal([patched.data.name, patched.data.max_concurrent_browsers], ['conformance-renamed', null], 'PATCH changed the fields given');
        // A browser memory cap below what a browser holds before its first page is refused, on any server.
        await admin(t, op('adminUpdateProject'), { pathParams: { project_id: p.id }, body: { browser_memory_limit_mb: 100 }, status: 400 });
        await admin(t, op('adminGetProject'), { pathParams: { project_id: `missing-${p.id}` }, status: 404 });
      } finally {
        await deleteProject(t, p.id);
      }
    }),

    check('AD3 a key is shown once, listed by prefix only, and answers 401 at once when revoked', async (t: T) => {
      needToken(t);
      const p = await newProject(t);
      try {
        const k = await newKey(t, p.id);
        t.assert(k.key.startsWith(k.prefix), `the key starts with its prefix (${k.prefix})`);
        const before = await withKey(t, 'getBilling', k.key);
        t.assert(before.res.status === 200, `the new key works: ${show(before.ex)}`);
        const keys = await admin(t, op('adminListKeys'), { pathParams: { project_id: p.id }, status: 200 });
        t.assert(
          keys.data.some((x: { id: string }) => x.id === k.id),
          'the listing holds the key',
        );
        t.assert(!JSON.stringify(keys).includes(k.key), 'the listing never shows the key');
        await admin(t, op('adminRevokeKey'), { pathParams: { key_id: k.id }, status: 200 });
        const after = await withKey(t, 'getBilling', k.key);
        t.assert(after.res.status === 401, `the revoked key, at once: ${show(after.ex)}`);
      } finally {
        await deleteProject(t, p.id);
      }
    }),

    check("AD4 a project's limits take the configuration's place", async (t: T) => {
      needToken(t);
      const p = await newProject(t, { included_credits: 7, cost_limit: 0, max_concurrent_browsers: 2 });
      try {
        const k = await newKey(t, p.id);
        const billing = await withKey(t, 'getBilling', k.key);
        t.assert(billing.res.status === 200, show(billing.ex));
        const data = (billing.res.json as { data: Record<string, unknown> }).data;
        t.equal(
          [data.included_credits, data.cost_limit, data.max_concurrent_browsers],
          [7, 0, 2],
          "GET /v1/billing shows the project's included_credits, cost_limit and max_concurrent_browsers",
        );
        const create = await withKey(t, 'createSession', k.key, { browser: { headless: { active: true } } });
        t.assert(create.res.status === 402, `a cost limit of 0 refuses session creation with 402: ${show(create.ex)}`);
      } finally {
        await deleteProject(t, p.id);
      }
    }),

    check('AD5 a deleted project is gone, and its keys with it', async (t: T) => {
      needToken(t);
      const p = await newProject(t);
      const k = await newKey(t, p.id);
      await deleteProject(t, p.id);
      await admin(t, op('adminGetProject'), { pathParams: { project_id: p.id }, status: 404 });
      await admin(t, op('adminListKeys'), { pathParams: { project_id: p.id }, status: 404 });
      const after = await withKey(t, 'getBilling', k.key);
      t.assert(after.res.status === 401, `the deleted project's key: ${show(after.ex)}`);
    }),

    check('AD6 the nodes are listed as documented, and the node answering is listed alive', async (t: T) => {
      needToken(t);
      if (!ctx.contract.adminOperations.some((o) => o.id === 'adminListNodes')) t.skip('the contract has no adminListNodes');
      const listed = (await admin(t, op('adminListNodes'), { status: 200 })).data as { id: string; status: string }[];
      t.assert(
        listed.some((n) => n.status === 'alive' || n.status === 'draining'),
        `no node is alive: ${JSON.stringify(listed).slice(0, 300)}`,
      );
      // /healthz is outside the contract: a server that does not name its node there is not held to it.
      const health = await send({ method: 'GET', url: `${ctx.options.baseUrl.replace(/\/+$/, '')}/healthz`, timeoutMs: ctx.options.timeoutMs ?? 10_000 }).catch(
        () => undefined,
      );
      const nodeId = (health?.json as { cluster?: { node_id?: unknown } } | undefined)?.cluster?.node_id;
      if (typeof nodeId !== 'string') return;
      const self = listed.find((n) => n.id === nodeId);
      t.assert(self !== undefined, `the node that answered /healthz (${nodeId}) is not listed`);
      t.assert(self!.status === 'alive' || self!.status === 'draining', `the node that answered /healthz (${nodeId}) is listed ${self!.status}`);
    }),
  ];
});
