// Judging a response against what the contract documents for its operation: the status
// (G2), the Content-Type (G3), the JSON body (G4), the headers (G5), and all of them at
// once for the error answers G6, G7 and G11 expect.
import type { Contract, JsonObject, Operation } from './contract.js';
import { isJsonMediaType, mediaType, type HttpResponse } from './http.js';

/** The documented media type a response's Content-Type falls under: exact, type/*, then * /*. */
export function matchMediaType(documented: string[], actual: string): string | undefined {
  const type = mediaType(actual);
  const [major] = type.split('/');
  return (
    documented.find((d) => mediaType(d) === type) ?? documented.find((d) => mediaType(d) === `${major}/*`) ?? documented.find((d) => mediaType(d) === '*/*')
  );
}

export function statusProblem(contract: Contract, op: Operation, res: HttpResponse): string | undefined {
  if (contract.response(op, res.status)) return undefined;
  return `${res.status} is not a status ${op.id} documents (${Object.keys(op.responses).join(', ')})`;
}

export type Verdict = { kind: 'pass'; note: string } | { kind: 'fail'; message: string } | { kind: 'skip'; reason: string };

export function contentTypeVerdict(contract: Contract, op: Operation, res: HttpResponse): Verdict {
  const r = contract.response(op, res.status);
  if (!r) return { kind: 'skip', reason: `${res.status} is not documented (see G2), so no Content-Type is` };
  const types = Object.keys(r.response.content ?? {});
  if (types.length === 0) {
    if (res.bytes.length === 0) return { kind: 'pass', note: `${res.status} with no body, as documented` };
    return {
      kind: 'fail',
      message: `the ${r.key} response documents no body, but the answer has ${res.bytes.length} bytes of ${res.contentType || 'unlabelled content'}`,
    };
  }
  if (!res.contentType) {
    return { kind: 'fail', message: `${res.status} came without a Content-Type; documented for ${r.key}: ${types.join(', ')}` };
  }
  const match = matchMediaType(types, res.contentType);
  if (!match) return { kind: 'fail', message: `${res.status} came as ${res.contentType}; documented for ${r.key}: ${types.join(', ')}` };
  return { kind: 'pass', note: `${res.status} ${res.contentType}` };
}

export function bodyVerdict(contract: Contract, op: Operation, res: HttpResponse): Verdict {
  const r = contract.response(op, res.status);
  if (!r) return { kind: 'skip', reason: `${res.status} is not documented (see G2)` };
  if (!isJsonMediaType(res.contentType)) {
    return { kind: 'skip', reason: `the ${res.status} answer is ${res.contentType || (res.bytes.length ? 'unlabelled' : 'empty')}, not JSON` };
  }
  const content: Record<string, JsonObject> = r.response.content ?? {};
  const key = matchMediaType(Object.keys(content), res.contentType);
  if (!key) return { kind: 'skip', reason: `${res.contentType} is not documented for ${r.key} (see G3)` };
  const schema = content[key].schema;
  if (!schema) return { kind: 'skip', reason: `the contract gives no schema for ${r.key} ${key}` };
  if (res.jsonError) return { kind: 'fail', message: `the ${res.status} body is labelled ${res.contentType} but is not JSON: ${res.jsonError}` };
  const error = contract.validate(schema, res.json, 'body');
  if (error) return { kind: 'fail', message: `${res.status} ${key}: ${error}` };
  return { kind: 'pass', note: `${res.status} ${key} validates` };
}

export interface HeaderVerdict {
  skip?: string;
  problems: string[];
  checked: string[];
  /** How many of the status's documented headers are required. */
  required: number;
}

/** Documented headers of the answer's status: required ones present, present ones valid. */
export function headerVerdict(contract: Contract, op: Operation, res: HttpResponse): HeaderVerdict {
  const r = contract.response(op, res.status);
  if (!r) return { skip: `${res.status} is not documented (see G2)`, problems: [], checked: [], required: 0 };
  const headers = Object.entries<JsonObject>(r.response.headers ?? {}).filter(([name]) => name.toLowerCase() !== 'content-type');
  if (headers.length === 0) return { skip: `the ${r.key} response documents no headers`, problems: [], checked: [], required: 0 };
  const problems: string[] = [];
  const checked: string[] = [];
  for (const [name, raw] of headers) {
    const h = contract.deref(raw);
    const value = res.headers.get(name);
    if (value === null) {
      if (h.required) problems.push(`required header ${name} is missing from the ${res.status} answer`);
      continue;
    }
    const schema: JsonObject | undefined = h.schema ?? (Object.values<JsonObject>(h.content ?? {})[0]?.schema as JsonObject | undefined);
    if (schema) {
      // Header values are text: validated with type coercion, wrapped so Ajv may coerce.
      const error = contract.validate({ type: 'object', properties: { [name]: schema } }, { [name]: value }, 'headers', { coerce: true });
      if (error) problems.push(`header ${name}: ${JSON.stringify(value)}: ${error}`);
    }
    checked.push(`${name}: ${value}`);
  }
  return { problems, checked, required: headers.filter(([, raw]) => contract.deref(raw).required === true).length };
}

/** Everything wrong with an answer as the documented answer for its status: status, Content-Type, body. */
export function documentedAnswerProblems(contract: Contract, op: Operation, res: HttpResponse): string[] {
  const status = statusProblem(contract, op, res);
  if (status) return [status];
  const problems: string[] = [];
  const ct = contentTypeVerdict(contract, op, res);
  if (ct.kind === 'fail') problems.push(ct.message);
  const body = bodyVerdict(contract, op, res);
  if (body.kind === 'fail') problems.push(body.message);
  return problems;
}
