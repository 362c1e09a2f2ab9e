// The challenge itself: one integer arithmetic expression of a few terms, easy for an AI
// agent to read and work out, impossible to guess. Pure functions; the store and the
// handlers decide what is kept and what is answered.
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { isIPv6 } from 'node:net';

export const CHALLENGE_TYPE = 'arithmetic';

export interface Challenge {
  type: typeof CHALLENGE_TYPE;
  title: string;
  prompt: string;
  /** The expected answer, canonical (see normalizeAnswer). */
  answer: string;
}

type Op = '+' | '-' | '*';

/** The shapes a challenge takes: factors are two-digit, addends up to three digits. */
const shapes: ((n: (min: number, max: number) => number) => (number | Op)[])[] = [
  (n) => [n(11, 99), '*', n(11, 99), '+', n(2, 999)],
  (n) => [n(11, 99), '*', n(11, 99), '-', n(2, 99)],
  (n) => [n(2, 999), '+', n(11, 99), '*', n(11, 99)],
  (n) => [n(11, 99), '*', n(11, 99), '+', n(11, 99), '*', n(2, 9)],
  (n) => [n(101, 999), '+', n(11, 99), '*', n(2, 9), '-', n(2, 99)],
];

/** Evaluates `a op b op c ...` with * before + and -, left to right. */
export function evaluate(terms: readonly (number | Op)[]): number {
  // Fold each run of products into one addend, then sum the signed addends.
  let total = 0;
  let sign = 1;
  let product = terms[0] as number;
  for (let i = 1; i < terms.length; i += 2) {
    const op = terms[i] as Op;
    const value = terms[i + 1] as number;
    if (op === '*') {
      product *= value;
    } else {
      total += sign * product;
      sign = op === '+' ? 1 : -1;
      product = value;
    }
  }
  return total + sign * product;
}

export function newChallenge(): Challenge {
  const n = (min: number, max: number) => randomInt(min, max + 1);
  const terms = shapes[randomInt(shapes.length)](n);
  const expression = terms.join(' ');
  return {
    type: CHALLENGE_TYPE,
    title: 'Evaluate an integer expression',
    prompt: `What is ${expression}? Multiplication comes before addition and subtraction. Answer with the integer only.`,
    answer: String(evaluate(terms)),
  };
}

/**
 * The canonical form of an answer: the integer in plain decimal. Surrounding space, a
 * trailing period and thousands separators are forgiven; anything else is not an integer
 * and yields undefined (a wrong answer).
 */
export function normalizeAnswer(answer: string): string | undefined {
  const s = answer
    .trim()
    .replace(/\.$/, '')
    .replace(/(?<=\d)[,_ ](?=\d)/g, '');
  if (!/^[-+]?\d{1,30}$/.test(s)) return undefined;
  return BigInt(s).toString();
}

export const newChallengeId = () => `chl_${randomBytes(9).toString('base64url')}`;
export const newToken = () => `act_${randomBytes(32).toString('base64url')}`;
export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The stored form of the expected answer: without the token it proves nothing. */
export const hashAnswer = (token: string, canonicalAnswer: string) => createHmac('sha256', token).update(`${CHALLENGE_TYPE}:${canonicalAnswer}`).digest('hex');

export function answerMatches(token: string, answer: string, storedHash: string): boolean {
  const canonical = normalizeAnswer(answer);
  if (canonical === undefined) return false;
  const given = Buffer.from(hashAnswer(token, canonical), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/**
 * The rate-limit key of a client address: IPv4 as is (also when IPv4-mapped), IPv6 by its
 * /64, which one host or customer usually holds whole and could otherwise rotate through.
 */
export function rateKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) return mapped[1];
  const address = ip.split('%')[0];
  if (!isIPv6(address)) return ip;
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]))); // embedded IPv4: two groups
  const [head, tail] = address.split('::');
  const full = tail === undefined ? groups(head) : [...groups(head), ...Array(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
