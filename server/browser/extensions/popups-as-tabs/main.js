// In the page's own world, before its scripts. Chromium opens a popup window when
// window.open asks for one through its features (size, position, `popup`, missing bars),
// and a tab when it does not: the features are dropped but for noopener and noreferrer,
// which change what the page may do with the tab, not where it opens.
const open = window.open;
window.open = function (url, target, features) {
  const kept = String(features ?? '')
    .split(/[\s,]+/)
    .filter((f) => /^(noopener|noreferrer)$/i.test(f))
    .join(',');
  return open.call(this, url, target, kept);
};
