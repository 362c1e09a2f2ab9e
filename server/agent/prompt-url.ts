// directlyOpenUrl (browser-use's directly_open_url): a task whose prompt names one page starts
// on it, sparing the agent a navigation step. Only when there is exactly one: with several,
// which comes first is the agent's call.

/** The prompt's one http(s) URL, without the punctuation that ends a sentence; undefined for none or several. */
export function onlyUrlIn(prompt: string): string | undefined {
  const found = new Set((prompt.match(/\bhttps?:\/\/[^\s<>"'`]+/gi) ?? []).map((u) => u.replace(/[.,;:!?)\]}]+$/, '')));
  return found.size === 1 ? [...found][0] : undefined;
}
