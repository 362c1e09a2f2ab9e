// The challenge's pure parts: expressions, answers, hashes, rate-limit keys.
import { describe, expect, it } from 'vitest';
import { answerMatches, evaluate, hashAnswer, newChallenge, normalizeAnswer, rateKey } from './challenge.js';

describe('agent-access challenge', () => {
  it('evaluates * before + and -, left to right', () => {
    expect(evaluate([17, '*', 23, '+', 4])).toBe(395);
    expect(evaluate([4, '+', 17, '*', 23])).toBe(395);
    expect(evaluate([100, '-', 2, '*', 3, '-', 4])).toBe(90);
    expect(evaluate([12, '*', 11, '+', 10, '*', 3])).toBe(162);
  });

  it('asks one expression of a few integer terms, with its answer', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const c = newChallenge();
      expect(c.type).toBe('arithmetic');
      const match = /^What is ([\d +*-]+)\?/.exec(c.prompt);
      expect(match, c.prompt).not.toBeNull();
      const terms = match![1].split(' ').map((t) => (/^\d+$/.test(t) ? Number(t) : t)) as (number | '+' | '-' | '*')[];
      expect(terms.length).toBeGreaterThanOrEqual(5);
      expect(c.answer).toBe(String(evaluate(terms)));
      expect(Number(c.answer)).toBeGreaterThan(0);
      seen.add(c.prompt);
    }
    expect(seen.size).toBeGreaterThan(190);
  });

  it('forgives spacing, a trailing period and thousands separators, nothing else', () => {
    expect(normalizeAnswer(' 7113 ')).toBe('7113');
    expect(normalizeAnswer('7,113.')).toBe('7113');
    expect(normalizeAnswer('+0042')).toBe('42');
    expect(normalizeAnswer('-5')).toBe('-5');
    for (const bad of ['', 'seven', '7113.5', '7e3', '0x1bc9', '7113 apples']) expect(normalizeAnswer(bad)).toBeUndefined();
  });

  it('matches answers only under the token they were hashed with', () => {
    const stored = hashAnswer('act_a', '391');
    expect(answerMatches('act_a', '391', stored)).toBe(true);
    expect(answerMatches('act_a', ' 391 ', stored)).toBe(true);
    expect(answerMatches('act_a', '392', stored)).toBe(false);
    expect(answerMatches('act_b', '391', stored)).toBe(false);
    expect(answerMatches('act_a', 'x', stored)).toBe(false);
  });

  it('keys IPv4 by address and IPv6 by its /64', () => {
    expect(rateKey('203.0.113.7')).toBe('203.0.113.7');
    expect(rateKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(rateKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(rateKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(rateKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(rateKey('::1')).toBe('0:0:0:0::/64');
    expect(rateKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(rateKey('unknown')).toBe('unknown');
  });
});
