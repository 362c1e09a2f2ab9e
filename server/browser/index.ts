// The browser runtime of a session: launching Chromium in a private root, warm pooled
// browsers, the sweep of what a killed server left, and the public CDP endpoint.
export { launchBrowser, rootPaths, type BrowserExit, type LaunchEnv, type RootAddition, type RunningBrowser } from './launch.js';
export type { AutoSelectCertificate, CertificateNameFilter } from './auto-select-certificates.js';
export { closeMeteredBrowser, launchMeteredBrowser, type MeteredBrowser } from './metered.js';
export { DEFAULT_LAUNCH_OPTIONS, sameLaunchOptions, type LaunchOptions } from './launch-options.js';
export { DISABLED_FEATURES, type Geometry, type Size } from './flags.js';
export { sweepOrphans } from './sweep.js';
export { groupUsage, within } from './procfs.js';
export { BUILT_IN_EXTENSIONS } from './extensions.js';
export { ADBLOCK, turnAdblockOff } from './adblock.js';
export { browsersDirFor, installationId } from './roots.js';
export { BrowserSandboxError, checkBrowserSandbox } from './browser-user.js';
export { BrowserLimitsError, checkBrowserCaps, type BrowserLimits } from './cgroup.js';
export { downloadsDirOf } from './download-path.js';
export { BrowserPool, type BrowserPoolOptions, type Poolable } from './pool.js';
export { prioritiesWork } from './cpu-priority.js';
export { groupPssBytes } from './group-memory.js';
export { createCdpProxy, parseCdpPath, versionDocument, type CdpProxy, type CdpProxyOptions, type CdpResolution, type CdpTarget } from './cdp-proxy.js';
export type { Log } from './log.js';
