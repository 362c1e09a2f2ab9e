// Shared by the task tests (not a test itself): task code as the API takes it, and a task
// with a deployed version in one call.
import { expect } from 'vitest';
import { call, type Requester } from '../batches/test-support.js';

export { call, until } from '../batches/test-support.js';

export const b64 = (source: string) => Buffer.from(source, 'utf8').toString('base64');

/** Opens `input.url` and answers the page title. */
export const TITLE_TASK = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  return { title: await ctx.page.title() };
}
`;

export async function createTask(server: Requester, body: Record<string, unknown> = {}): Promise<string> {
  const res = await call(server, 'POST', '/v1/task', { name: `t-${Math.random().toString(36).slice(2, 10)}`, language: 'typescript', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.id as string;
}

/** A task whose version 1 is `source`; answers the task id. */
export async function deployedTask(server: Requester, source: string, browserConfiguration: Record<string, unknown> = {}): Promise<string> {
  const id = await createTask(server);
  const res = await call(server, 'POST', `/v1/task/${id}/deploy`, { code: b64(source), language: 'typescript', browserConfiguration });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return id;
}
