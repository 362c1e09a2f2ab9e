// The boundary cases G13 sends, from a contract: the edges of each field, which are valid,
// the numbers inside a pattern, and the base made fit (URLs on a fixture page, no long waits).
import { describe, expect, it } from 'vitest';
import { Contract, type JsonObject } from './contract.js';
import { applyToBody, boundaryCases, prepareBase } from './boundaries.js';
import { chooseCases } from './generic/g13.js';

const body: JsonObject = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { type: 'string', format: 'uri', maxLength: 100 },
    scale: { type: 'number', minimum: 0.1, maximum: 2 },
    index: { type: 'integer', minimum: 0 },
    margin: { type: 'object', additionalProperties: false, properties: { top: { type: 'string', pattern: '^(0|\\d+(\\.\\d+)?(px|cm))$' } } },
    timeoutMs: { type: 'integer', minimum: 0, maximum: 600000, default: 60000 },
  },
};
const contract = new Contract({
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  paths: {
    '/print': {
      post: {
        operationId: 'print',
        parameters: [{ name: 'tags', in: 'query', schema: { type: 'array', maxItems: 2, items: { type: 'string' } } }],
        requestBody: { required: true, content: { 'application/json': { schema: body, example: { url: 'https://e.com/', margin: { top: '1cm' } } } } },
        responses: { '200': { description: 'ok' } },
      },
    },
  },
});
const op = contract.operations[0]!;
const page = 'http://127.0.0.1:1/site/form.html';
const base = prepareBase(contract, body, { url: 'https://e.com/' }, page) as Record<string, unknown>;
const cases = boundaryCases(contract, op, base, { pageUrl: page });
const byWhat = (what: string) => cases.find((c) => c.what === what);

describe('boundary cases', () => {
  it('point the base at the fixture page and send a long wait at its minimum', () => {
    expect(base).toEqual({ url: page, timeoutMs: 0 });
    expect(prepareBase(contract, body, { url: 'https://e.com/', timeoutMs: 60000 }, page)).toEqual({ url: page, timeoutMs: 0 });
    // Left out, timeoutMs would wait its default: neither it nor a body without it is sent.
    expect(byWhat('body {}')).toMatchObject({ valid: false });
    expect(cases.some((c) => c.what === 'no body' && c.valid)).toBe(false);
  });

  it('take numbers to their edges, one past them, and past 32 bits where there is no maximum', () => {
    expect(byWhat('scale = its minimum 0.1')).toMatchObject({ valid: true });
    expect(byWhat('scale = its maximum 2')).toMatchObject({ valid: true });
    expect(byWhat('scale = 2.01, over its maximum')).toMatchObject({ valid: false });
    expect(byWhat('index = 2^31')).toMatchObject({ valid: true, variation: { value: 2 ** 31 } });
    expect(byWhat('index = -1, under its minimum')).toMatchObject({ valid: false });
    expect(byWhat('index = a fraction')).toMatchObject({ valid: false });
  });

  it("take a pattern's numbers, shaped by the contract's example, to 400 digits, and fill the optional parent", () => {
    const c = byWhat('margin.top with its numbers = 400 nines')!;
    expect(c.valid).toBe(true);
    expect(applyToBody(base, c.variation!)).toEqual({ url: page, timeoutMs: 0, margin: { top: `${'9'.repeat(400)}cm` } });
  });

  it('leave out an empty query array (it is no parameter at all) and keep a full one', () => {
    expect(cases.filter((c) => c.variation?.place === 'query').map((c) => c.what)).toContain('query tags of its maximum 2 items');
    expect(cases.some((c) => c.variation?.place === 'query' && Array.isArray(c.variation.value) && c.variation.value.length === 0)).toBe(false);
  });

  it('choose every refused case and the valid ones up to the budget, the same for the same seed', () => {
    const valid = cases.filter((c) => c.valid).length;
    const chosen = chooseCases(cases, 1, op.id, 3);
    expect(chosen.filter((c) => c.valid)).toHaveLength(Math.min(3, valid));
    expect(chosen.filter((c) => !c.valid)).toHaveLength(cases.filter((c) => !c.valid).length);
    expect(chooseCases(cases, 1, op.id, 3)).toEqual(chosen);
  });
});
