// The forms the vendor's SDKs send to the identity operations, over real HTTP on the real
// database: credentials without their `type` (told by their fields, refused when their
// fields are of two kinds or of none), and the metadata filter as the JSON text of an object.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { call } from './test-support.js';

const SOURCE = 'https://forms.example.com/login';
const SEED = 'JBSWY3DPEHPK3PXP';

describe('identity requests in the forms of the vendor SDKs', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a credential without type is taken for the kind its fields say', async () => {
    const made = await call(server, 'POST', '/v1/identities', {
      source: SOURCE,
      credentials: [{ username: 'buyer', password: 'pw' }, { secret: SEED }, { fields: [{ name: 'company', value: 'Acme' }] }],
    });
    expect(made.status).toBe(201);
    const held = await call(server, 'GET', `/v1/identities/${made.body.id}/credentials`);
    expect(held.body.credentials).toEqual([
      { type: 'username_password', fields: ['username', 'password'] },
      { type: 'authenticator', fields: ['secret'] },
      { type: 'custom', fields: ['company'] },
    ]);
    // Two untyped credentials of one kind are refused as two typed ones are.
    const twice = await call(server, 'POST', '/v1/identities', { source: SOURCE, credentials: [{ secret: SEED }, { secret: SEED, type: 'authenticator' }] });
    expect(twice).toMatchObject({ status: 400, body: { error: { message: 'credentials: at most one credential of type authenticator' } } });
  });

  it('a credential whose fields are of two kinds, or of none, answers 400 naming what each kind lacks', async () => {
    const refusal = async (credential: unknown) =>
      (await call(server, 'POST', '/v1/identities', { source: SOURCE, credentials: [credential] })) as { status: number; body: { error: { message: string } } };
    expect(await refusal({ username: 'buyer', password: 'pw', secret: SEED })).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message:
            "body/credentials/0 matches none of its forms: must not have the property 'secret'; or must not have the property 'username'; or must have the property 'fields'",
        },
      },
      text: expect.any(String),
    });
    expect((await refusal({})).body.error.message).toBe(
      "body/credentials/0 matches none of its forms: must have the property 'username'; or must have the property 'secret'; or must have the property 'fields'",
    );
    expect((await refusal({ username: 'buyer' })).body.error.message).toMatch(
      /^body\/credentials\/0 matches none of its forms: must have the property 'password'; /,
    );
  });

  it("the metadata filter of an application's identities takes the JSON text of an object, and refuses other text", async () => {
    const a = (await call(server, 'POST', '/v1/identities', { source: SOURCE, name: 'A', metadata: { team: 'a', level: 2 } })).body;
    await call(server, 'POST', '/v1/identities', { source: SOURCE, name: 'B', metadata: { team: 'b' } });
    const list = async (query: string) => call(server, 'GET', `/v1/applications/${a.application_id}/identities?${query}`);
    const names = async (query: string) => (await list(query)).body.identities.map((i: { name: string }) => i.name);
    // Its values may be any JSON, as the vendor's metadata.
    expect(await names(`metadata=${encodeURIComponent(JSON.stringify({ team: 'a', level: 2 }))}`)).toEqual(['A']);
    expect(await names(`metadata=${encodeURIComponent('{}')}`)).toHaveLength(3);
    // The contract's own form still works.
    expect(await names('metadata[team]=b')).toEqual(['B']);
    for (const text of ['not json', '[1]', '"a"', 'null']) {
      expect(await list(`metadata=${encodeURIComponent(text)}`)).toMatchObject({
        status: 400,
        body: { error: { message: 'query/metadata must be an object: metadata[key]=value pairs, or the JSON text of an object' } },
      });
    }
  });
});
