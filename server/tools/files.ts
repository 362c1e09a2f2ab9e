// Main documents that are not pages: which responses the tool returns as they came rather
// than rendered, which of those go out as a download, and the file name they go by.
export { attachmentHeader } from '../http/attachment.js';

/** A non-HTML resource, as the upstream served it. */
export interface FileResult {
  kind: 'file';
  contentType: string;
  body: Buffer;
  /** `attachment; filename="…"` for PDFs and downloads. */
  disposition?: string;
  status: number;
  /** Where the file came from, after redirects. */
  url: string;
}

/** Types a browser shows as a page (everything else is returned as it came). */
function isHtmlType(contentType: string | undefined): boolean {
  if (!contentType) return true; // the browser sniffs; it renders what it can
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'text/html' || type === 'application/xhtml+xml';
}

/** Types returned as they are but not as a download. */
export function isInlineType(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase();
  return /^(text\/|image\/|application\/(.+\+)?(json|xml)$|application\/(javascript|ecmascript|x-javascript|ld\+json|manifest\+json|rss\+xml|atom\+xml)$)/.test(
    type,
  );
}

/** The file name of a download: the upstream's Content-Disposition, else the URL's last segment. */
export function fileNameOf(disposition: string | undefined, url: string): string {
  if (disposition) {
    const star = /filename\*\s*=\s*(?:UTF-8|utf-8)?''([^;]+)/i.exec(disposition);
    if (star) {
      try {
        return decodeURIComponent(star[1].trim().replace(/^"|"$/g, ''));
      } catch {
        // fall through
      }
    }
    const plain = /filename\s*=\s*("([^"]*)"|[^;]+)/i.exec(disposition);
    if (plain) return (plain[2] ?? plain[1]).trim();
  }
  try {
    const seg = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? '');
    if (seg) return seg;
  } catch {
    // fall through
  }
  return 'download';
}

export function isDownload(headers: Record<string, string>): boolean {
  const disposition = headers['content-disposition'];
  return disposition !== undefined && /^\s*attachment/i.test(disposition);
}

/** A main document the tool returns as it came rather than as a rendered page. */
export function isFile(headers: Record<string, string>): boolean {
  return isDownload(headers) || !isHtmlType(headers['content-type']);
}
