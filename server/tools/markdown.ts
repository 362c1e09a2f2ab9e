// HTML to Markdown for the content tool: node-html-markdown (pure JavaScript, no DOM),
// one converter reused, since building one compiles its rules.
import { NodeHtmlMarkdown } from 'node-html-markdown';

const converter = new NodeHtmlMarkdown({ ignore: ['script', 'style', 'noscript', 'template'] });

export function toMarkdown(html: string): string {
  return converter.translate(html);
}
