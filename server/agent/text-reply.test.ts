// Replies of plain text read as a model meant them (calls written as text, answers in JSON),
// and the snapshot trimmed to the viewport: what a small model needs from the agent.
import { describe, expect, it } from 'vitest';
import { compileAnswerSchema, type AnswerSchema } from './answer-schema.js';
import { trimSnapshot } from './snapshot-trim.js';
import { readTextReply } from './text-reply.js';

const TOOLS = ['click', 'type', 'finish', 'give_up'];
const schema = compileAnswerSchema({ type: 'object', required: ['price'], properties: { price: { type: 'number' } } }) as AnswerSchema;

describe('a reply in plain text', () => {
  it('an answer that conforms, bare, fenced, with prose around it, or wrapped as finish takes it', () => {
    for (const text of [
      '{"price": 12.5}',
      'Here it is:\n```json\n{"price": 12.5}\n```\nAnything else?',
      'The price is {"price": 12.5} as shown.',
      '{"answer": {"price": 12.5}}',
    ])
      expect(readTextReply(text, TOOLS, schema), text).toEqual({ kind: 'answer', answer: { price: 12.5 } });
  });

  it('an answer that does not conform or does not parse says why; no JSON at all is nothing', () => {
    expect(readTextReply('Result: {"price": "12"}', TOOLS, schema)).toEqual({ kind: 'wrong-answer', why: 'answer/price must be number' });
    expect(readTextReply('```json\n{"price": 12,}\n```', TOOLS, schema)).toMatchObject({
      kind: 'wrong-answer',
      why: expect.stringMatching(/^it is not valid JSON/),
    });
    expect(readTextReply('I clicked the button.', TOOLS, schema)).toEqual({ kind: 'none' });
    // Without an output_schema, JSON in the text is no answer of its own (the text is).
    expect(readTextReply('{"price": 12}', TOOLS, undefined)).toEqual({ kind: 'none' });
  });

  it('tool calls written as text: <tool_call>, a bare object, OpenAI-style function, a list; unknown names are not calls', () => {
    const click = { id: 'text_call_1', name: 'click', arguments: { ref: 'e3' } };
    expect(readTextReply('<tool_call>\n{"name": "click", "arguments": {"ref": "e3"}}\n</tool_call>', TOOLS, schema)).toEqual({ kind: 'calls', calls: [click] });
    expect(readTextReply('Clicking now. {"name": "click", "parameters": {"ref": "e3"}}', TOOLS, undefined)).toEqual({ kind: 'calls', calls: [click] });
    expect(readTextReply('{"type": "function", "function": {"name": "click", "arguments": "{\\"ref\\": \\"e3\\"}"}}', TOOLS, undefined)).toEqual({
      kind: 'calls',
      calls: [click],
    });
    expect(
      readTextReply('[{"name": "type", "arguments": {"ref": "e1", "text": "x"}}, {"name": "click", "arguments": {"ref": "e3"}}]', TOOLS, undefined),
    ).toEqual({
      kind: 'calls',
      calls: [
        { id: 'text_call_1', name: 'type', arguments: { ref: 'e1', text: 'x' } },
        { id: 'text_call_2', name: 'click', arguments: { ref: 'e3' } },
      ],
    });
    expect(readTextReply('{"name": "click", "arguments": "{\\"ref\\": e3"}', TOOLS, undefined)).toEqual({
      kind: 'calls',
      calls: [{ id: 'text_call_1', name: 'click', arguments: { _invalid: '{"ref": e3' } }],
    });
    expect(readTextReply('{"name": "press", "arguments": {}}', TOOLS, undefined)).toEqual({ kind: 'none' });
  });
});

describe('the snapshot trimmed to the viewport', () => {
  const snapshot = [
    '- generic [active] [ref=e1] [box=8,21,1264,1066]:',
    '  - heading "Offer" [level=1] [ref=e2] [box=8,21,1264,37]',
    '  - generic [ref=e3] [box=8,80,1264,22]:',
    '    - text: Plan',
    '    - combobox "Plan" [ref=e5] [box=40,82,55,19]:',
    '      - option "Free" [selected] [box=0,0,0,0]',
    '      - option "Pro" [box=0,0,0,0]',
    '  - generic [ref=e4] [box=8,117,1264,937]:',
    '    - paragraph [ref=e6] [box=8,117,1264,900]: All the details.',
    '    - button "Buy" [ref=e7] [box=8,1033,39,21]',
    '    - link "Terms" [ref=e8] [box=8,1060,39,21]:',
    '      - /url: /terms',
    '  - button "Back to top" [ref=e9] [box=8,-400,39,21]',
  ].join('\n');

  it('keeps what is in view without boxes or bare wrappers, and counts the interactive elements out of it', () => {
    const t = trimSnapshot(snapshot, 720);
    expect(t.text).toBe(
      [
        '- heading "Offer" [level=1] [ref=e2]',
        '- text: Plan',
        '- combobox "Plan" [ref=e5]:',
        '  - option "Free" [selected]',
        '  - option "Pro"',
        '- paragraph [ref=e6]: All the details.',
      ].join('\n'),
    );
    expect([t.above, t.below]).toEqual([1, 2]);
    expect(trimSnapshot(snapshot, 2000)).toMatchObject({ above: 1, below: 0 });
  });
});
