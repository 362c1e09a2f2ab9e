// Extensions of our own that some session options load (extensions/): each a content
// script in the page's own world, in every page and frame the browser opens, the ones a
// user's CDP client opens included, at no cost per page to the server.
import { fileURLToPath } from 'node:url';

const dir = (name: string) => fileURLToPath(new URL(`./extensions/${name}/`, import.meta.url));

export const BUILT_IN_EXTENSIONS = {
  /** browser.disable_dialogs */
  noDialogs: dir('no-dialogs'),
  /** browser.force_popups_as_tabs */
  popupsAsTabs: dir('popups-as-tabs'),
} as const;
