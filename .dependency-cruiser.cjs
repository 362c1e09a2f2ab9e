// The import rules of server/, checked by `pnpm deps` (a step of `pnpm test`).
//
// Layers, bottom to top; a module imports its own layer or lower ones, never higher:
//   base          config/ store/ http/ auth/ log.ts     what everything stands on
//                 tracing.ts
//   services      net/ browser/ page/ credits/ outbox/  shared by several capabilities,
//                 storage/ secrets/ sandbox/ llm/       and the contract capabilities meet in
//                 capability/
//   capabilities  every other folder (metrics/ and      one folder a capability; another
//                 cluster/ too)                         capability only through its index.ts
//   assembly      server.ts main.ts                     imported by nothing but tests
// and no import circle anywhere, type-only imports included.
const base = '^server/(?:(?:config|store|http|auth)/|(?:log|tracing)\\.ts$)';
const services = '^server/(?:net|browser|page|credits|outbox|storage|secrets|sandbox|llm|capability)/';
const below = [base, services];
const assembly = '^server/(?:server|main)\\.ts$';
const capability = '^server/(?!(?:config|store|http|auth|net|browser|page|credits|outbox|storage|secrets|sandbox|llm|capability|testing)/)([^/]+)/';
// Tests and their support may reach anything (a test starts the whole server).
const tests = '\\.(?:test|typetest)\\.ts$|test-support\\.ts$|\\.fixture\\.ts$|test-worker-child\\.ts$|^server/testing/';

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'An import circle: break it by moving the shared part down a layer.', from: {}, to: { circular: true } },
    {
      name: 'assembly-on-top',
      severity: 'error',
      comment: 'Nothing imports the assembly: what a module needs is given to its factory, by interface.',
      from: { path: '^server/', pathNot: [tests, assembly] },
      to: { path: assembly },
    },
    {
      name: 'base-imports-base',
      severity: 'error',
      comment: 'config/, store/, http/, auth/ and log.ts import nothing above them.',
      from: { path: base, pathNot: tests },
      to: { path: '^server/', pathNot: base },
    },
    {
      name: 'services-below-capabilities',
      severity: 'error',
      comment: 'A shared service imports base and other services only.',
      from: { path: services, pathNot: tests },
      to: { path: '^server/', pathNot: below },
    },
    {
      name: 'capability-through-index',
      severity: 'error',
      comment: "A capability uses another capability only through that folder's index.ts, never its internals.",
      from: { path: capability, pathNot: tests },
      to: { path: '^server/[^/]+/', pathNot: [...below, '^server/$1/', '^server/[^/]+/index\\.ts$'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules|^generated/' },
  },
};
