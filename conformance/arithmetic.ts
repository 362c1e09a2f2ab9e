// Solves the agent-access "arithmetic" challenge without eval: finds the one integer
// expression in the prompt ("What is 17 * 23 + 4?") and evaluates it with a small
// recursive-descent parser (+ - * / and parentheses, usual precedence, unary minus).

const OPS: Record<string, string> = { '×': '*', x: '*', X: '*', '÷': '/', '−': '-', '–': '-' };

/** The expression in a prompt: the longest run of digits, operators, parentheses and spaces holding an operator between numbers. */
export function findExpression(prompt: string): string | undefined {
  const normalized = prompt.replace(/(\d)\s*([xX×÷−–])\s*(?=[\d(])/g, (_, a: string, op: string) => `${a} ${OPS[op]} `).replace(/[×÷−–]/g, (c) => OPS[c]);
  const runs = normalized.match(/[-+*/()\d\s]+/g) ?? [];
  const candidates = runs.map((r) => r.trim()).filter((r) => /\d\s*[-+*/]\s*[-(\d]/.test(r));
  return candidates.sort((a, b) => b.length - a.length)[0];
}

export function evaluateExpression(expression: string): number {
  const tokens = expression.match(/\d+|[-+*/()]/g) ?? [];
  if (tokens.join('') !== expression.replace(/\s+/g, '')) throw new Error(`unexpected characters in "${expression}"`);
  let i = 0;
  const peek = () => tokens[i];
  const next = () => tokens[i++];
  const primary = (): number => {
    const t = next();
    if (t === undefined) throw new Error(`"${expression}" ends early`);
    if (t === '-') return -primary();
    if (t === '+') return primary();
    if (t === '(') {
      const v = sum();
      if (next() !== ')') throw new Error(`unbalanced parentheses in "${expression}"`);
      return v;
    }
    if (/^\d+$/.test(t)) return Number(t);
    throw new Error(`unexpected "${t}" in "${expression}"`);
  };
  const product = (): number => {
    let v = primary();
    while (peek() === '*' || peek() === '/') {
      const op = next();
      const r = primary();
      if (op === '*') v *= r;
      else {
        if (r === 0) throw new Error('division by zero');
        v = Math.trunc(v / r);
      }
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = next() === '+' ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (i !== tokens.length) throw new Error(`unexpected "${tokens[i]}" in "${expression}"`);
  return value;
}

/** The answer to an arithmetic challenge prompt, as the text to send. */
export function solveArithmetic(prompt: string): string {
  const expression = findExpression(prompt);
  if (!expression) throw new Error(`no arithmetic expression in the prompt "${prompt}"`);
  return String(evaluateExpression(expression));
}
