// Runs the vendor's generated SDK tests as they are, against the server SDK_SUITE_BASE_URL
// names: un-skipped, and given the key SDK_SUITE_API_KEY, while they load (README.md).
// 0.16.3's on the published package; main's on it with main's tasks resource (main/client.ts).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  plugins: [
    {
      name: 'run-against-this-server',
      // Before TypeScript is stripped, which rewrites the quotes.
      enforce: 'pre',
      transform(code, id) {
        if (!id.includes('/api-resources/')) return undefined;
        // main's tests on 0.16.3 with main's one new resource rebuilt (main/client.ts).
        const client = id.includes('/main/api-resources/') ? code.replace("from 'anchorbrowser'", `from '${import.meta.dirname}/main/client.ts'`) : code;
        return client
          .replaceAll('test.skip(', 'test(')
          .replace("apiKey: 'Your API Key'", 'apiKey: process.env.SDK_SUITE_API_KEY')
          .replace("process.env['TEST_API_BASE_URL'] ?? 'http://127.0.0.1:4010'", "process.env['SDK_SUITE_BASE_URL']");
      },
    },
  ],
  test: {
    globals: true,
    include: ['*/api-resources/**/*.test.ts'],
    testTimeout: 60_000,
    fileParallelism: false,
  },
});
