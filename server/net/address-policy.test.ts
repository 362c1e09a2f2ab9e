import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { assertPublicUrl, blockedRange, guardedLookup, parseIPv6, UrlPolicyError } from './address-policy.js';

describe('blockedRange', () => {
  const blocked = [
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '100.64.0.1',
    '100.127.255.254',
    '127.0.0.1',
    '127.8.9.10',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.8',
    '192.0.2.1',
    '192.168.1.1',
    '198.18.0.1',
    '198.51.100.7',
    '203.0.113.9',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '::127.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:169.254.169.254',
    '::ffff:0:a00:1',
    '64:ff9b::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::1',
    '2002:7f00:1::1',
    '2002:c0a8:101::1',
    'fc00::1',
    'fd12:3456:789a::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'fec0::1',
    'ff02::1',
    '2001:db8::1',
    '100::1',
    '2001::1',
    '[::1]',
    'not-an-ip',
    '1.2.3',
    '1.2.3.256',
  ];
  const allowed = [
    '1.1.1.1',
    '8.8.8.8',
    '93.184.215.14',
    '100.63.255.255',
    '100.128.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '169.253.1.1',
    '192.169.0.1',
    '11.0.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ];
  it.each(blocked)('refuses %s', (ip) => expect(blockedRange(ip)).not.toBeNull());
  it.each(allowed)('allows %s', (ip) => expect(blockedRange(ip)).toBeNull());

  it('parses IPv6 forms', () => {
    expect(parseIPv6('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6('1::')).toEqual([1, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(parseIPv6('1:2:3:4:5:6:7:8:9')).toBeNull();
    expect(parseIPv6('1::2::3')).toBeNull();
    expect(parseIPv6('12345::')).toBeNull();
  });
});

describe('assertPublicUrl', () => {
  const resolveTo =
    (...addrs: string[]) =>
    async () =>
      addrs;
  // resolve null: the real resolver.
  const refused = async (url: string, reason: string, resolve: ((h: string) => Promise<string[]>) | null = resolveTo('93.184.215.14')) => {
    const err = await assertPublicUrl(url, { allowPrivate: false, ...(resolve ? { resolve } : {}) }).catch((e) => e);
    expect(err).toBeInstanceOf(UrlPolicyError);
    expect((err as UrlPolicyError).reason).toBe(reason);
  };

  it('accepts a public http(s) URL', async () => {
    const r = await assertPublicUrl('https://example.com/hook?x=1', { allowPrivate: false, resolve: resolveTo('93.184.215.14') });
    expect(r.url.href).toBe('https://example.com/hook?x=1');
    expect(r.addresses).toEqual(['93.184.215.14']);
  });
  it('refuses other schemes and bad URLs', async () => {
    await refused('ftp://example.com/', 'unsupported_scheme');
    await refused('file:///etc/passwd', 'unsupported_scheme');
    await refused('javascript:alert(1)', 'unsupported_scheme');
    await refused('not a url', 'invalid_url');
  });
  it('refuses literal private addresses in every spelling', async () => {
    for (const u of [
      'http://127.0.0.1/',
      'http://0x7f.1/',
      'http://2130706433/',
      'http://017700000001/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://169.254.169.254/latest/meta-data',
      'http://0.0.0.0:8080/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://10.1.2.3/',
      'http://100.64.1.1/',
    ]) {
      await refused(u, 'private_address');
    }
  });
  it('refuses a name if any address it resolves to is private', async () => {
    await refused('http://evil.example/', 'private_address', resolveTo('93.184.215.14', '127.0.0.1'));
    await refused('http://evil.example/', 'private_address', resolveTo('::ffff:10.0.0.1'));
  });
  it('refuses names that do not resolve', async () => {
    await refused('http://nothing.invalid/', 'unresolvable', async () => {
      throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
    });
  });
  it('resolves for real: localhost is loopback', async () => {
    await refused('http://localhost:1/', 'private_address', null);
  });
  it('lets everything through when the operator allows private networks', async () => {
    const r = await assertPublicUrl('http://127.0.0.1:9/', { allowPrivate: true });
    expect(r.url.port).toBe('9');
    await expect(assertPublicUrl('gopher://127.0.0.1/', { allowPrivate: true })).rejects.toThrow(UrlPolicyError);
  });
});

describe('guardedLookup at connection time', () => {
  it('refuses a connection to a name that resolves to loopback, and allows it when private is allowed', async () => {
    const server = createServer((_q, s) => s.end('hi'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const get = (allowPrivate: boolean) =>
      new Promise<string>((resolve, reject) => {
        import('node:http').then(({ request }) => {
          const req = request({ host: 'localhost', port, family: 4, lookup: guardedLookup(allowPrivate) as never }, (res) => {
            res.resume();
            res.on('end', () => resolve(String(res.statusCode)));
          });
          req.on('error', reject);
          req.end();
        });
      });
    await expect(get(false)).rejects.toThrow(/private networks/);
    await expect(get(true)).resolves.toBe('200');
    server.close();
  });
});
