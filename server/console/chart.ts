// Credits per day as an inline SVG bar chart: no chart library, nothing to load, and it
// prints. Bars scale to the largest day; the axis shows that maximum and the first and last
// dates.
import { html } from 'hono/html';

export interface Bar {
  /** ISO date-time of the bucket's start. */
  start: string;
  value: number;
}

export function barChart(bars: Bar[], label: string) {
  const W = 720;
  const H = 200;
  const pad = { left: 48, right: 8, top: 10, bottom: 22 };
  const max = Math.max(0, ...bars.map((b) => b.value));
  const plotW = W - pad.left - pad.right;
  const plotH = H - pad.top - pad.bottom;
  const step = bars.length ? plotW / bars.length : plotW;
  const y = (v: number) => (max > 0 ? (v / max) * plotH : 0);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${label}" width="100%" preserveAspectRatio="xMinYMin meet">
    <line x1="${pad.left}" y1="${pad.top + plotH}" x2="${W - pad.right}" y2="${pad.top + plotH}"></line>
    <line x1="${pad.left}" y1="${pad.top}" x2="${W - pad.right}" y2="${pad.top}"></line>
    <text x="${pad.left - 6}" y="${pad.top + 4}" text-anchor="end">${fmt(max)}</text>
    <text x="${pad.left - 6}" y="${pad.top + plotH}" text-anchor="end">0</text>
    ${bars.map((b, i) => {
      const h = y(b.value);
      return html`<rect
        class="bar"
        data-date="${b.start.slice(0, 10)}"
        data-value="${b.value}"
        x="${(pad.left + i * step + step * 0.1).toFixed(1)}"
        y="${(pad.top + plotH - h).toFixed(1)}"
        width="${(step * 0.8).toFixed(1)}"
        height="${h.toFixed(1)}"
        ><title>${b.start.slice(0, 10)}: ${fmt(b.value)} credits</title></rect
      >`;
    })}
    ${bars.length
      ? html`<text x="${pad.left}" y="${H - 6}">${bars[0]!.start.slice(0, 10)}</text
          ><text x="${W - pad.right}" y="${H - 6}" text-anchor="end">${bars[bars.length - 1]!.start.slice(0, 10)}</text>`
      : ''}
  </svg>`;
}

const fmt = (v: number) => (v === 0 ? '0' : v < 0.01 ? v.toExponential(1) : v.toFixed(v < 10 ? 3 : 1));
