import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { parseServiceProxyPool } from './service-proxy-pool.js';

const dir = mkdtempSync(join(tmpdir(), 'sp-pool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The startup error's problems for a pool file, or [] when it loads. */
function problems(path: string): string[] {
  try {
    loadConfig({ SERVICE_PROXY_POOL: path });
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('SERVICE_PROXY_POOL', () => {
  it('reads a YAML file and a JSON file into the same entries', () => {
    const yaml = file(
      'pool.yaml',
      `# the operator's proxies
- url: http://alice:s3cret@proxy-us.example:3128
  country_code: US
  region: California
  city: San Francisco
- url: socks5://proxy-de.example
  country_code: de
`,
    );
    const json = file(
      'pool.json',
      JSON.stringify([
        { url: 'http://alice:s3cret@proxy-us.example:3128', country_code: 'US', region: 'California', city: 'San Francisco' },
        { url: 'socks5://proxy-de.example', country_code: 'de' },
      ]),
    );
    const fromYaml = loadConfig({ SERVICE_PROXY_POOL: yaml }).serviceProxyPool;
    expect(loadConfig({ SERVICE_PROXY_POOL: json }).serviceProxyPool).toEqual(fromYaml);
    expect(fromYaml).toEqual([
      {
        id: expect.stringMatching(/^sp_[0-9a-f]{16}$/),
        url: 'http://alice:s3cret@proxy-us.example:3128',
        label: 'http://proxy-us.example:3128',
        host: 'proxy-us.example',
        port: 3128,
        country_code: 'us',
        region: 'California',
        city: 'San Francisco',
      },
      // SOCKS's port by default.
      {
        id: expect.stringMatching(/^sp_/),
        url: 'socks5://proxy-de.example',
        label: 'socks5://proxy-de.example:1080',
        host: 'proxy-de.example',
        port: 1080,
        country_code: 'de',
      },
    ]);
    expect(loadConfig({}).serviceProxyPool).toBeUndefined();
  });

  it('gives each entry an id from its URL without the password: stable across order and password changes, distinct per user name', () => {
    const ids = (doc: unknown[]) => parseServiceProxyPool(doc).entries.map((e) => e.id);
    const [a, b] = ids([
      { url: 'http://u:one@gw.example:7000', country_code: 'us' },
      { url: 'http://u-country-de:one@gw.example:7000', country_code: 'de' },
    ]);
    expect(a).not.toBe(b);
    expect(
      ids([
        { url: 'http://u-country-de:rotated@gw.example:7000', country_code: 'de' },
        { url: 'http://u:rotated@gw.example:7000', country_code: 'us' },
      ]),
    ).toEqual([b, a]);
    // The default port written out or not is the same proxy.
    expect(ids([{ url: 'http://h.example', country_code: 'us' }])).toEqual(ids([{ url: 'http://h.example:80', country_code: 'us' }]));
  });

  it('stops the start naming each bad entry and its problem, never repeating credentials', () => {
    const path = file(
      'bad.yaml',
      JSON.stringify([
        { url: 'http://user:one@ok.example:3128', country_code: 'us' },
        { url: 'ftp://user:hunter2@ftp.example:21', country_code: 'us' },
        { url: 'http://user:hunter2@[bad', country_code: 'us' },
        { url: 'http://user:hunter2@p.example:8080', country_code: 'usa' },
        { url: 'http://p2.example:8080', country_code: 'us', country: 'us' },
        { url: 'socks5://p3.example:1080', country_code: 'de', city: 'Berlin' },
        { url: 'http://user:hunter2@p4.example:8080/path', country_code: 'de' },
        { country_code: 'de' },
        'http://p5.example:8080',
        { url: 'http://user:other@ok.example:3128', country_code: 'de' },
        { url: 'https://p6.example', region: 'x' },
      ]),
    );
    const p = problems(path);
    const prefix = `SERVICE_PROXY_POOL=${JSON.stringify(path)}: `;
    expect(p).toEqual([
      `${prefix}entry 2: url scheme "ftp" is not supported (http, https or socks5)`,
      `${prefix}entry 3: url is not a valid URL (such as http://user:pass@host:3128 or socks5://host:1080)`,
      `${prefix}entry 4 (http://p.example:8080): country_code "usa" is not two letters (ISO 3166-1 alpha-2, such as us)`,
      `${prefix}entry 5 (http://p2.example:8080): unknown field "country"; the fields are url, country_code, region, city`,
      `${prefix}entry 6 (socks5://p3.example:1080): a city needs its region`,
      `${prefix}entry 7 (http://p4.example:8080): url must be a proxy address only (scheme://user:pass@host:port), without a path, query or fragment`,
      `${prefix}entry 8: url is missing`,
      `${prefix}entry 9: must be an object {url, country_code, region?, city?}`,
      `${prefix}entry 10 (http://ok.example:3128): the same proxy as entry 1 (the same URL but for the password)`,
      `${prefix}entry 11 (https://p6.example:443): country_code is missing (ISO 3166-1 alpha-2, such as us)`,
    ]);
    expect(p.join('\n')).not.toContain('hunter2');
  });

  it('says what is wrong with the file itself', () => {
    expect(problems(join(dir, 'missing.yaml'))[0]).toMatch(/SERVICE_PROXY_POOL=".*missing\.yaml": the file cannot be read \(ENOENT\)/);
    expect(problems(file('object.json', '{"url": "http://a:1", "country_code": "us"}'))[0]).toMatch(/the file must hold an array/);
    expect(problems(file('empty.json', '[]'))[0]).toMatch(/the pool is empty; unset SERVICE_PROXY_POOL/);
    const broken = problems(file('broken.yaml', '- url: http://user:hunter2@h:1\n  country_code: [us\n'));
    expect(broken[0]).toMatch(/the file is not valid JSON or YAML: .* \(line \d+\)/);
    expect(broken.join('')).not.toContain('hunter2');
  });
});
