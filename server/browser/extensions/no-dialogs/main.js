// In the page's own world, before its scripts: the dialogs a person would have to answer
// answer themselves, as a dismissed dialog would.
window.alert = function alert() {};
window.confirm = function confirm() {
  return false;
};
window.prompt = function prompt() {
  return null;
};
