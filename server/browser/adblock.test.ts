// The ad-block extension as shipped: its id, the lists it carries and what they need. The
// blocking itself runs in real Chromium in sessions/adblock.test.ts.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADBLOCK } from './adblock.js';
import { allowInNewContexts } from './extensions.js';

const dir = fileURLToPath(new URL('./extensions/adblock/', import.meta.url));
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const lists = JSON.parse(readFileSync(join(dir, 'lists.json'), 'utf8'));

interface Rule {
  id: number;
  action: { type: string; redirect?: { extensionPath?: string } };
  condition: { regexFilter?: string };
}

const rulesets = (manifest.declarative_net_request.rule_resources as { id: string; path: string; enabled: boolean }[]).map((r) => ({
  ...r,
  rules: JSON.parse(readFileSync(join(dir, r.path), 'utf8')) as Rule[],
}));

describe('the ad-block extension', () => {
  it('has the id Chromium derives from its manifest key (computed apart: SHA-256 of the key, a–p)', () => {
    expect(ADBLOCK.id).toBe('mnbloadcjobnmkoeahigaedimlppjllf');
    expect(manifest.manifest_version).toBe(3);
    expect(manifest.permissions).toEqual(['declarativeNetRequest']);
  });

  it('carries EasyList and EasyPrivacy, enabled, as lists.json records them, within what Chromium enables', () => {
    expect(lists.lists.map((l: { name: string }) => l.name)).toEqual(['EasyList', 'EasyPrivacy']);
    expect(lists.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(manifest.version).toBe(lists.version);
    expect(ADBLOCK.version).toBe(lists.version);
    expect(ADBLOCK.rulesets).toEqual(rulesets.map((r) => r.id));
    for (const r of rulesets) expect(r.enabled).toBe(true);
    for (const list of lists.lists as { id: string; rules: number; filters: number }[]) {
      const count = rulesets.filter((r) => r.id === list.id || r.id === `${list.id}-regex`).reduce((n, r) => n + r.rules.length, 0);
      expect(count, list.id).toBe(list.rules);
      expect(list.filters, list.id).toBeGreaterThan(10_000);
    }
    const all = rulesets.flatMap((r) => r.rules);
    expect(all.length).toBeLessThanOrEqual(30_000); // GUARANTEED_MINIMUM_STATIC_RULES
    expect(all.filter((r) => r.condition.regexFilter !== undefined).length).toBeLessThanOrEqual(1_000);
    for (const r of rulesets) expect(new Set(r.rules.map((x) => x.id)).size, r.id).toBe(r.rules.length);
  });

  it('redirects only to neutral files of its own, which pages may load', () => {
    const paths = rulesets.flatMap((r) => r.rules).flatMap((r) => (r.action.type === 'redirect' ? [r.action.redirect?.extensionPath] : []));
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) {
      expect(p).toMatch(/^\/neutral\//);
      expect(existsSync(join(dir, p!)), p).toBe(true);
    }
    expect(manifest.web_accessible_resources).toEqual([{ resources: ['neutral/*'], matches: ['<all_urls>'] }]);
    expect(existsSync(join(dir, 'off.html'))).toBe(true);
  });

  it('is allowed in new browser contexts by the profile, other settings kept', () => {
    const prefs: any = { extensions: { settings: { other: { incognito: false }, [ADBLOCK.id]: { kept: 1 } } }, download: {} };
    allowInNewContexts(prefs, [ADBLOCK.id]);
    expect(prefs.extensions.settings).toEqual({ other: { incognito: false }, [ADBLOCK.id]: { kept: 1, incognito: true } });
    const fresh: any = {};
    allowInNewContexts(fresh, [ADBLOCK.id]);
    expect(fresh).toEqual({ extensions: { settings: { [ADBLOCK.id]: { incognito: true } } } });
  });
});
