// The fixture site of the agent's tests and benchmarks: a two-page form to fill, a table to
// extract, a page whose button moves (and is replaced) after a click, file inputs, and a
// long catalog page. It records what reached it, so a test checks the effect of the agent's
// actions, not only what it said.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestSite {
  url(path: string): string;
  /** What each form page was sent (its query string), in order. */
  readonly submissions: { path: string; query: Record<string, string> }[];
  /** Paths of beacons the pages sent (/bought). */
  readonly beacons: string[];
  /** Files the upload page was given, each as its name and text, in order. */
  readonly uploads: { name: string; text: string }[][];
  close(): Promise<void>;
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

export const PRODUCTS = [
  { name: 'Espresso machine', price: 249.5, stock: 4 },
  { name: 'Milk frother', price: 39, stock: 0 },
  { name: 'Coffee grinder', price: 89.99, stock: 12 },
];

export async function startTestSite(): Promise<TestSite> {
  const submissions: { path: string; query: Record<string, string> }[] = [];
  const beacons: string[] = [];
  const uploads: { name: string; text: string }[][] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const q = Object.fromEntries(url.searchParams);
    const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    switch (url.pathname) {
      case '/form/1':
        return html(
          page(
            'Sign up: step 1 of 2',
            `<h1>Sign up</h1><form action="/form/2"><label>Full name <input name="name" required></label>
             <label>Email <input name="email" type="email" required></label><button>Next</button></form>`,
          ),
        );
      case '/form/2':
        submissions.push({ path: url.pathname, query: q });
        return html(
          page(
            'Sign up: step 2 of 2',
            `<h1>Choose a plan</h1><form action="/form/done">
             <input type="hidden" name="name" value="${esc(q.name ?? '')}"><input type="hidden" name="email" value="${esc(q.email ?? '')}">
             <label>Plan <select name="plan"><option value="free">Free</option><option value="pro">Pro</option><option value="team">Team</option></select></label>
             <label><input type="checkbox" name="terms" value="yes"> I accept the terms</label><button>Submit</button></form>`,
          ),
        );
      case '/form/done':
        submissions.push({ path: url.pathname, query: q });
        return html(page('Signed up', `<h1>Thank you, ${esc(q.name ?? '')}!</h1><p>Plan: ${esc(q.plan ?? '')}</p>`));
      case '/table':
        return html(
          page(
            'Products',
            `<h1>Products</h1><table><thead><tr><th>Name</th><th>Price (EUR)</th><th>In stock</th></tr></thead><tbody>${PRODUCTS.map(
              (p) => `<tr><td>${p.name}</td><td>${p.price.toFixed(2)}</td><td>${p.stock}</td></tr>`,
            ).join('')}</tbody></table>`,
          ),
        );
      case '/moving':
        // "Show details" puts a long block above "Buy" and replaces the button with a new
        // element: a ref to the old button names nothing any more.
        return html(
          page(
            'Moving button',
            `<h1>Offer</h1><button id="details">Show details</button><div id="box"></div><div id="slot"><button class="buy">Buy</button></div><p id="status">Not bought</p>
             <script>
               const wire = (b) => b.addEventListener('click', () => { document.getElementById('status').textContent = 'Bought'; fetch('/bought'); });
               wire(document.querySelector('.buy'));
               document.getElementById('details').addEventListener('click', () => {
                 document.getElementById('slot').innerHTML = '';
                 const box = document.getElementById('box');
                 box.innerHTML = '<p style="height:900px">All the details of the offer.</p>';
                 const b = document.createElement('button'); b.className = 'buy'; b.textContent = 'Buy';
                 box.appendChild(b); wire(b);
               });
             </script>`,
          ),
        );
      case '/catalog':
        // A page like a shop's: a menu, a long list of products and a footer, most of it
        // below the fold; the benchmark counts what the model is shown of it.
        return html(
          page(
            'Catalog',
            `<nav>${Array.from({ length: 16 }, (_, i) => `<a href="/catalog?section=${i}">Section ${i + 1}</a>`).join(' ')}</nav>
             <h1>Catalog</h1><label>Search <input type="search" name="q"></label>${[
               ...PRODUCTS,
               ...Array.from({ length: 57 }, (_, i) => ({ name: `Accessory ${i + 1}`, price: 5 + i, stock: i % 3 })),
             ]
               .map(
                 (p) =>
                   `<div class="card"><div><h2>${p.name}</h2><div><p>Price: ${p.price.toFixed(2)} EUR, ${p.stock} in stock.</p></div><div><button>Add to cart</button> <a href="/catalog?item=${encodeURIComponent(p.name)}">Details</a></div></div></div>`,
               )
               .join('')}<footer>${Array.from({ length: 12 }, (_, i) => `<a href="/about/${i}">About ${i + 1}</a>`).join(' ')}</footer>`,
          ),
        );
      case '/upload':
        // A file input, and a button that opens the chooser of a hidden one: each reports the
        // files it was given, with their text.
        return html(
          page(
            'Upload',
            `<h1>Send your documents</h1><label>Document <input id="doc" type="file" multiple></label>
             <input id="hidden" type="file" hidden><button id="choose">Choose a file</button>
             <script>
               const report = async (input) => fetch('/uploaded', { method: 'POST', body: JSON.stringify(await Promise.all([...input.files].map(async (f) => ({ name: f.name, text: await f.text() })))) });
               for (const id of ['doc', 'hidden']) document.getElementById(id).addEventListener('change', (e) => report(e.target));
               document.getElementById('choose').addEventListener('click', () => document.getElementById('hidden').click());
             </script>`,
          ),
        );
      case '/uploaded': {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          uploads.push(JSON.parse(body) as { name: string; text: string }[]);
          res.writeHead(204).end();
        });
        return;
      }
      case '/bought':
        beacons.push('/bought');
        return res.writeHead(204).end();
      default:
        return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (path) => origin + path,
    submissions,
    beacons,
    uploads,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
