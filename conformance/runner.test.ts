import { describe, expect, it } from 'vitest';
import {
  check,
  firstDifference,
  jsonReport,
  junitXml,
  parseSelectors,
  runCheck,
  runChecks,
  selectChecks,
  STATEFUL_REASON,
  totalsLine,
  type T,
} from './runner.js';
import { evaluateExpression, findExpression, solveArithmetic } from './arithmetic.js';
import { newChallenge } from '../server/agent-access/challenge.js';

describe('checks', () => {
  it('take their rule ID from the name, and refuse names without one', () => {
    expect(check('G4 createSession body validates', () => {}).id).toBe('G4');
    expect(check('BL2 usage block', () => {}).id).toBe('BL2');
    expect(() => check('createSession body validates', () => {})).toThrow(/rule ID/);
  });

  it('pass, fail, skip, and fail when they assert nothing or throw', async () => {
    const pass = await runCheck(check('G1 a', (t: T) => t.assert(true, 'never')));
    expect(pass).toMatchObject({ status: 'pass', id: 'G1' });
    const fail = await runCheck(check('G1 b', (t: T) => t.assert(1 > 2, 'one is not more than two')));
    expect(fail).toMatchObject({ status: 'fail', message: 'one is not more than two' });
    const skip = await runCheck(check('G1 c', (t: T) => t.skip('no fixture')));
    expect(skip).toMatchObject({ status: 'skip', message: 'no fixture' });
    const empty = await runCheck(check('G1 d', () => {}));
    expect(empty.status).toBe('fail');
    expect(empty.message).toMatch(/asserted nothing/);
    const threw = await runCheck(
      check('G1 e', () => {
        throw new Error('boom');
      }),
    );
    expect(threw.status).toBe('fail');
    expect(threw.message).toMatch(/boom/);
    const unequal = await runCheck(check('G1 f', (t: T) => t.equal({ a: [1, 2] }, { a: [1, 3] }, 'bodies')));
    expect(unequal.message).toBe('bodies: /a/1: 2, expected 3');
  });

  it('skip stateful checks under --stateless with the documented reason', async () => {
    let ran = false;
    const c = check('S1 needs a session', (t: T) => {
      ran = true;
      t.assert(true, '');
    });
    expect(await runCheck(c, { stateless: true })).toMatchObject({ status: 'skip', message: STATEFUL_REASON });
    expect(ran).toBe(false);
    const g = check('G2 stateless', (t: T) => t.assert(true, ''), { stateful: false });
    expect((await runCheck(g, { stateless: true })).status).toBe('pass');
  });

  it('select by rule ID, family, and skip list', () => {
    const all = ['G1 a', 'G10 b', 'G11 c', 'S1 d', 'BL2 e'].map((n) => check(n, () => {}));
    const names = (only: string[], skip: string[]) => selectChecks(all, parseSelectors(only), parseSelectors(skip)).map((c) => c.id);
    expect(names(['g1,S1'], [])).toEqual(['G1', 'S1']);
    expect(names(['G*'], ['G10'])).toEqual(['G1', 'G11']);
    expect(names([], ['G1', 'S1,BL2'])).toEqual(['G10', 'G11']);
  });
});

describe('a run', () => {
  it('prints a line per check in order, parallel ones included, and the totals', async () => {
    const lines: string[] = [];
    const order: string[] = [];
    const slow = (name: string, ms: number) =>
      check(
        name,
        async (t: T) => {
          // A fake check that takes ms: the order parallel ones finish in is the subject, not a wait.
          await new Promise((r) => setTimeout(r, ms));
          order.push(name);
          t.assert(true, '');
        },
        { stateful: false, parallel: true },
      );
    const report = await runChecks(
      [
        slow('G6 first', 60),
        slow('G6 second', 10),
        check('G7 sequential', (t: T) => t.fail('broken'), { stateful: false }),
        check('S1 stateful', (t: T) => t.assert(true, '')),
      ],
      { stateless: true, out: (l) => lines.push(l) },
    );
    expect(order).toEqual(['G6 second', 'G6 first']);
    expect(lines.map((l) => l.split(' — ')[0].replace(/ \(\d+ ms\)$/, ''))).toEqual([
      '[1/4] PASS G6 first',
      '[2/4] PASS G6 second',
      '[3/4] FAIL G7 sequential',
      '[4/4] SKIP S1 stateful',
    ]);
    expect(lines[3]).toContain(STATEFUL_REASON);
    expect(totalsLine(report.summary)).toBe('2 passed, 1 failed, 1 skipped');

    const xml = junitXml(report);
    expect(xml).toContain('<testsuites name="conformance" tests="4" failures="1" skipped="1"');
    expect(xml).toContain('<testsuite name="conformance.G6" tests="2" failures="0" skipped="0"');
    expect(xml).toContain('<failure message="broken" type="G7">broken</failure>');
    expect(xml).toContain(`<skipped message="${STATEFUL_REASON}"/>`);
    expect((xml.match(/<testcase /g) ?? []).length).toBe(4);

    const json = jsonReport(report, { baseUrl: 'http://x' }) as { summary: object; checks: { status: string }[]; baseUrl: string };
    expect(json.summary).toEqual({ passed: 2, failed: 1, skipped: 1 });
    expect(json.checks.map((c) => c.status)).toEqual(['pass', 'pass', 'fail', 'skip']);
    expect(json.baseUrl).toBe('http://x');
  });

  it('escapes what XML cannot hold', () => {
    const xml = junitXml({
      startedAt: 'now',
      finishedAt: 'now',
      durationMs: 1,
      summary: { passed: 0, failed: 1, skipped: 0 },
      results: [{ id: 'G4', name: 'G4 <a> & "b"', status: 'fail', message: 'x\u0001<y>', notes: [], durationMs: 1 }],
    });
    expect(xml).toContain('name="G4 &lt;a&gt; &amp; &quot;b&quot;"');
    expect(xml).toContain('>x&lt;y&gt;</failure>');
  });
});

describe('firstDifference', () => {
  it('ignores key order and names where values differ', () => {
    expect(firstDifference({ a: 1, b: { c: [1] } }, { b: { c: [1] }, a: 1 })).toBeUndefined();
    expect(firstDifference({ a: 1 }, { a: 1, b: 2 })).toBe('/b: missing, expected 2');
    expect(firstDifference([1], [1, 2])).toBe('(root): 1 items, expected 2');
  });
});

describe('arithmetic challenges', () => {
  it('finds and evaluates the expression of a prompt, without eval', () => {
    expect(solveArithmetic('What is 17 * 23 + 4?')).toBe('395');
    expect(findExpression('What is 2 + 3 * (4 - 1)? Answer with the integer only.')).toBe('2 + 3 * (4 - 1)');
    expect(solveArithmetic('Compute 12 × 3 − 5.')).toBe('31');
    expect(evaluateExpression('-4 + 10 / 3')).toBe(-1);
    expect(() => evaluateExpression('2 + process.exit()')).toThrow();
    expect(() => solveArithmetic('no numbers here')).toThrow(/no arithmetic expression/);
  });

  it("solves the server's own challenges", () => {
    for (let i = 0; i < 300; i++) {
      const c = newChallenge();
      expect(solveArithmetic(c.prompt)).toBe(c.answer);
    }
  });
});
