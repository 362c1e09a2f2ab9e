import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_SCHEDULE_MS, JITTER, maxAttempts, MAX_RETRY_AFTER_MS, nextRetryDelay, parseRetryAfter } from './retry.js';
import { activeSecrets, generateSecret, sign, signatureHeaders } from './signing.js';

describe('retry schedule', () => {
  it('reaches about a day over 11 attempts, growing', () => {
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total / 3_600_000).toBeGreaterThan(20);
    expect(total / 3_600_000).toBeLessThan(30);
    expect(maxAttempts()).toBe(11);
    for (let i = 1; i < DEFAULT_RETRY_SCHEDULE_MS.length; i++) {
      expect(DEFAULT_RETRY_SCHEDULE_MS[i]).toBeGreaterThanOrEqual(DEFAULT_RETRY_SCHEDULE_MS[i - 1]);
    }
  });
  it('applies ±20 % jitter and stops after the last attempt', () => {
    expect(nextRetryDelay(1, { random: () => 0 })).toBe(5000 * (1 - JITTER));
    expect(nextRetryDelay(1, { random: () => 0.999999 })).toBeCloseTo(5000 * (1 + JITTER), -1);
    expect(nextRetryDelay(10, { random: () => 0.5 })).toBe(10 * 3_600_000);
    expect(nextRetryDelay(11)).toBeNull();
    expect(nextRetryDelay(0)).toBeNull();
    expect(nextRetryDelay(2, { schedule: [10, 20], random: () => 0.5 })).toBe(20);
    expect(nextRetryDelay(3, { schedule: [10, 20] })).toBeNull();
  });
  it('honours Retry-After when longer, up to a day', () => {
    expect(nextRetryDelay(1, { random: () => 0.5, retryAfterMs: 60_000 })).toBe(60_000);
    expect(nextRetryDelay(1, { random: () => 0.5, retryAfterMs: 1_000 })).toBe(5_000);
    expect(nextRetryDelay(1, { random: () => 0.5, retryAfterMs: 10 * MAX_RETRY_AFTER_MS })).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(Date.now() + 30_000).toUTCString())).toBeGreaterThan(25_000);
    expect(parseRetryAfter('soon')).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });
});

describe('signing', () => {
  it('matches the standardwebhooks library', () => {
    const secret = generateSecret();
    const at = new Date();
    const body = JSON.stringify({ hello: 'wörld' });
    expect(sign(secret, 'evt_1', Math.floor(at.getTime() / 1000), body)).toBe(new Webhook(secret).sign('evt_1', at, body));
    const headers = signatureHeaders([secret], 'evt_1', body, at);
    expect(new Webhook(secret).verify(body, headers)).toEqual({ hello: 'wörld' });
    expect(() => new Webhook(secret).verify(body + ' ', headers)).toThrow();
  });
  it('signs with the previous secret only during its grace period', () => {
    const now = new Date();
    const s = { secret: 'whsec_bmV3', previous_secret: 'whsec_b2xk', previous_secret_expires_at: new Date(now.getTime() + 1000) };
    expect(activeSecrets(s, now)).toEqual(['whsec_bmV3', 'whsec_b2xk']);
    expect(activeSecrets(s, new Date(now.getTime() + 1001))).toEqual(['whsec_bmV3']);
    expect(activeSecrets({ secret: 'whsec_bmV3', previous_secret: null, previous_secret_expires_at: null })).toEqual(['whsec_bmV3']);
    const headers = signatureHeaders(activeSecrets(s, now), 'evt_2', '{}', now);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/);
  });
});
