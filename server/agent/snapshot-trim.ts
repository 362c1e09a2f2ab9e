// The page as a small model sees it: the aria snapshot (taken with boxes) cut down to what
// is in the viewport, with unnamed wrappers (generic, none) left out and their children
// moved up, and the boxes dropped. What lies above or below is counted, so the model knows
// to scroll. A model with a short context (LLM_CONTEXT_TOKENS) reads this instead of the
// full snapshot, which on a real page is mostly nesting and off-screen content.

/** Roles a model acts on: counted when out of view, so it knows there is more to reach. */
const INTERACTIVE = new Set([
  'button',
  'link',
  'textbox',
  'searchbox',
  'checkbox',
  'radio',
  'combobox',
  'listbox',
  'option',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'tab',
  'switch',
  'slider',
  'spinbutton',
  'treeitem',
]);
/** Roles that only wrap: without a name or text of their own, their line says nothing. */
const WRAPPERS = new Set(['generic', 'none', 'presentation', 'group', 'rowgroup']);

interface Node {
  line: string;
  indent: number;
  role: string;
  box?: { y: number; h: number; w: number };
  children: Node[];
}

export interface TrimmedSnapshot {
  text: string;
  /** Interactive elements left out, above and below the viewport. */
  above: number;
  below: number;
}

const BOX = / \[box=(-?[\d.]+),(-?[\d.]+),(-?[\d.]+),(-?[\d.]+)\]/;

function parse(yaml: string): Node[] {
  const root: Node = { line: '', indent: -2, role: '', children: [] };
  const stack: Node[] = [root];
  for (const line of yaml.split('\n')) {
    if (!line.trim()) continue;
    const indent = line.length - line.trimStart().length;
    const m = BOX.exec(line);
    const role = /^\s*- (\w+)/.exec(line)?.[1] ?? '';
    const node: Node = {
      line: line.replace(BOX, '').trimStart(),
      indent,
      role,
      ...(m ? { box: { y: Number(m[2]), w: Number(m[3]), h: Number(m[4]) } } : {}),
      children: [],
    };
    while (stack.length > 1 && stack.at(-1)!.indent >= indent) stack.pop();
    stack.at(-1)!.children.push(node);
    stack.push(node);
  }
  return root.children;
}

/** The snapshot of `page.ariaSnapshot({ mode: 'ai', boxes: true })`, trimmed to a viewport of this height. */
export function trimSnapshot(yaml: string, viewportHeight: number): TrimmedSnapshot {
  const out: string[] = [];
  let above = 0;
  let below = 0;
  const countHidden = (n: Node) => {
    if (INTERACTIVE.has(n.role) && n.box && (n.box.w > 0 || n.box.h > 0)) {
      if (n.box.y + n.box.h <= 0) above++;
      else below++;
    }
    n.children.forEach(countHidden);
  };
  const walk = (n: Node, depth: number) => {
    // An element without a size (an option of a closed select) is where its parent is.
    const sized = n.box && (n.box.w > 0 || n.box.h > 0);
    if (sized && (n.box!.y + n.box!.h <= 0 || n.box!.y >= viewportHeight)) return countHidden(n);
    // "- generic [ref=e4]:" names nothing; "- generic [ref=e4]: some text" carries the text.
    const bare = WRAPPERS.has(n.role) && /^- \w+(?: \[[^\]]*\])*:?$/.test(n.line);
    if (!bare) out.push(`${'  '.repeat(depth)}${n.line}`);
    for (const c of n.children) walk(c, bare ? depth : depth + 1);
  };
  for (const n of parse(yaml)) walk(n, 0);
  return { text: out.join('\n'), above, below };
}
