// The contract itself at /openapi.yaml, and the API reference (Redoc) at /docs.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Capability } from '../capability/index.js';

const openapiYaml = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));
const redocBundle = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

const docsPage = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Cloud Browser Service API</title>
  <style>body { margin: 0; }</style>
</head>
<body>
  <redoc spec-url="/openapi.yaml"></redoc>
  <script src="/docs/redoc.standalone.js"></script>
</body>
</html>`;

export function docs(): Capability {
  return {
    name: 'docs',
    routes(app) {
      app.get('/openapi.yaml', (c) => c.body(readFileSync(openapiYaml, 'utf8'), 200, { 'content-type': 'application/yaml' }));
      app.get('/docs', (c) => c.html(docsPage));
      app.get('/docs/redoc.standalone.js', (c) =>
        c.body(readFileSync(redocBundle), 200, { 'content-type': 'text/javascript', 'cache-control': 'public, max-age=86400' }),
      );
    },
  };
}
