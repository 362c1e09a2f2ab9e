// The output_schema of a web task: compiled once (a schema that does not compile is the
// client's 400), then every answer the model proposes is checked against it.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under NodeNext its default export may arrive wrapped.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats: AddFormats = (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

export interface AnswerSchema {
  /** The schema as given, for the model's finish tool. */
  readonly schema: Record<string, unknown>;
  /** Why the answer does not conform, or undefined when it does. */
  check(answer: unknown): string | undefined;
}

/** The compiled schema, or the reason it cannot be compiled. */
export function compileAnswerSchema(schema: Record<string, unknown>): AnswerSchema | { error: string } {
  // Draft-07 and 2020-12 schemas alike: the keywords agents use mean the same in both.
  const { $schema: _ignored, ...rest } = schema;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(rest);
  } catch (err) {
    return { error: `output_schema is not a valid JSON Schema: ${(err as Error).message}` };
  }
  return {
    schema: rest,
    check(answer) {
      if (validate(answer)) return undefined;
      return ajv.errorsText(validate.errors, { dataVar: 'answer' });
    },
  };
}
