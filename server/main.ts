// `pnpm start`: the service on its configuration (embedded defaults: PGlite in DATA_DIR,
// the system Chromium). SIGTERM and SIGINT shut it down gracefully; a second signal exits.
import { accessSync, constants } from 'node:fs';
import { ConfigError, loadConfig } from './config/config.js';
import { createLogger } from './log.js';
import { startServer } from './server.js';

function fatal(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) fatal(err.message);
  throw err;
}
try {
  // A node without browsers (MAX_CONCURRENT_BROWSERS=0) launches none: it needs no Chromium.
  if (config.maxConcurrentBrowsers > 0) accessSync(config.chromiumPath, constants.X_OK);
} catch {
  fatal(
    `Invalid configuration:\n  - CHROMIUM_PATH=${JSON.stringify(config.chromiumPath)} is not an executable file ` +
      "(install Debian's chromium package, or point CHROMIUM_PATH at Chrome or Chromium)",
  );
}

const log = createLogger(config.logLevel);
const server = await startServer(config, log).catch((err: Error) => {
  log.fatal({ err }, 'start failed');
  fatal(`Could not start: ${err.message}`);
});

if (server.createdApiKey) {
  // Printed once, on the first start only, to the terminal and never to the logs.
  process.stdout.write(
    `\nFirst start: created an API key for the default project. It is shown only now:\n\n  ${server.createdApiKey}\n\n` +
      `Send it in the service-api-key header. Set BOOTSTRAP_API_KEY to choose the key yourself.\n\n`,
  );
}

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info({ signal }, 'shutting down');
    // Drain first (still serving: the running sessions' clients reach them), then close.
    server
      .drain()
      .catch((err: unknown) => log.error({ err }, 'drain failed'))
      .then(() => server.close())
      .then(
        () => process.exit(0),
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}
