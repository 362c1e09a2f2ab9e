// OS-level input against a fixture page that records what it receives, on a headful
// session (XTest on its display) and a headless one (CDP Input.*), through the real server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSession } from '../sessions/test-support.js';
import { BOX, PageProbe, decodePng, eventsOf, findColour, startFixtureServer, untilPasses, type FixtureServer, type RecordedEvent } from './test-support.js';

const VIEWPORT = { width: 1024, height: 768 };
const centre = (b: { x: number; y: number; w: number; h: number }) => ({ x: b.x + Math.floor(b.w / 2), y: b.y + Math.floor(b.h / 2) });
const of = (events: RecordedEvent[], type: string) => events.filter((e) => e.type === type);

describe.each(
  (
    [
      ['headful', false],
      ['headless', true],
    ] as const
  ).filter(([mode]) => !process.env.INPUT_MODE || process.env.INPUT_MODE === mode),
)('OS-level input on a %s session', (_mode, headless) => {
  let server: TestServer;
  let fixtures: FixtureServer;
  let probe: PageProbe;
  let id: string;

  const call = async (method: 'GET' | 'POST', path: string, body?: unknown, sessionId = id) => {
    const res = await server.request(`/v1/sessions/${sessionId}/${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    const type = res.headers.get('content-type') ?? '';
    const payload = type.includes('json') ? await res.json() : new Uint8Array(await res.arrayBuffer());
    return { status: res.status, body: payload as any, type };
  };
  const events = (urlPart?: string) => probe.events(urlPart);

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = await startFixtureServer();
    const created = await createSession(server, {
      session: { initial_url: fixtures.url('/input'), recording: { active: false } },
      browser: { headless: { active: headless }, viewport: VIEWPORT },
    });
    id = created.id;
    probe = await PageProbe.connect(created.cdp_url);
    // Input coordinates are the page's: the toolbar above it must not shift them.
    const m = await probe.eval<{ oh: number; iw: number; ih: number }>('({ oh: outerHeight, iw: innerWidth, ih: innerHeight })');
    expect([m.iw, m.ih]).toEqual([VIEWPORT.width, VIEWPORT.height]);
    expect(m.oh).toBeGreaterThan(m.ih);
    await events();
  });

  afterAll(async () => {
    probe?.close();
    await server?.close();
    await fixtures?.close();
  });

  it('clicks where it is told, with the left, right and middle buttons, as trusted events', async () => {
    const at = centre(BOX.button);
    expect((await call('POST', 'mouse/click', { ...at, button: 'left' })).status).toBe(200);
    let e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'click')).toHaveLength(1);
      return got;
    });
    const down = of(e, 'mousedown')[0]!;
    expect(down).toMatchObject({ x: at.x, y: at.y, button: 0, detail: 1, trusted: true, target: 'button' });
    expect(of(e, 'mouseup')[0]).toMatchObject({ x: at.x, y: at.y, button: 0, trusted: true });
    expect(of(e, 'click')[0]).toMatchObject({ x: at.x, y: at.y, trusted: true, target: 'button' });

    expect((await call('POST', 'mouse/click', { ...at, button: 'right' })).status).toBe(200);
    e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'contextmenu')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'mousedown')[0]).toMatchObject({ button: 2, trusted: true, x: at.x, y: at.y });
    expect(of(e, 'contextmenu')[0]).toMatchObject({ trusted: true });

    expect((await call('POST', 'mouse/click', { ...at, button: 'middle' })).status).toBe(200);
    e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'mouseup')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'mousedown')[0]).toMatchObject({ button: 1, trusted: true });
  });

  it('double-clicks (the page sees a dblclick, detail 2)', async () => {
    const at = centre(BOX.button);
    expect((await call('POST', 'mouse/doubleClick', at)).status).toBe(200);
    const e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'dblclick')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'dblclick')[0]).toMatchObject({ x: at.x, y: at.y, detail: 2, trusted: true, button: 0 });
    expect(of(e, 'click').map((c) => c.detail)).toEqual([1, 2]);
  });

  it('moves, presses and releases separately (a pointer drag)', async () => {
    const a = { x: 600, y: 400 };
    const b = { x: 700, y: 450 };
    expect((await call('POST', 'mouse/move', a)).status).toBe(200);
    expect((await call('POST', 'mouse/down', a)).status).toBe(200);
    expect((await call('POST', 'mouse/move', b)).status).toBe(200);
    expect((await call('POST', 'mouse/up', b)).status).toBe(200);
    const e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'mouseup')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'mousedown')[0]).toMatchObject({ x: a.x, y: a.y, buttons: 1, trusted: true });
    expect(of(e, 'mousemove').some((m) => m.x === b.x && m.y === b.y && m.buttons === 1 && m.trusted)).toBe(true);
    expect(of(e, 'mouseup')[0]).toMatchObject({ x: b.x, y: b.y, buttons: 0, trusted: true });
  });

  it('drags and drops an HTML draggable onto a drop target', async () => {
    const from = centre(BOX.drag);
    const to = centre(BOX.drop);
    const res = await call('POST', 'drag-and-drop', { startX: from.x, startY: from.y, endX: to.x, endY: to.y });
    expect(res.status).toBe(200);
    const e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'drop')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'dragstart')[0]).toMatchObject({ target: 'drag', trusted: true });
    expect(of(e, 'drop')[0]).toMatchObject({ target: 'drop', trusted: true });
  });

  it('scrolls with the wheel', async () => {
    expect((await call('POST', 'scroll', { x: 600, y: 400, deltaY: 480, steps: 2 })).status).toBe(200);
    const e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'wheel').reduce((s, w) => s + (w.deltaY ?? 0), 0)).toBe(480);
      return got;
    });
    expect(of(e, 'wheel').every((w) => w.trusted && w.x === 600 && w.y === 400)).toBe(true);
    await untilPasses(async () => expect(await probe.eval<number>('scrollY')).toBe(480));
    expect((await call('POST', 'scroll', { x: 600, y: 400, deltaY: -480, deltaX: 0 })).status).toBe(200);
    await untilPasses(async () => expect(await probe.eval<number>('scrollY')).toBe(0));
    await events();
  });

  it('types text into the focused element, a trusted key event per character', async () => {
    await call('POST', 'mouse/click', centre(BOX.text));
    const text = 'Hello, World! 123 <a&b> "quoted" é';
    expect((await call('POST', 'keyboard/type', { text })).status).toBe(200);
    await untilPasses(async () => expect(await probe.eval<string>("document.getElementById('text').value")).toBe(text));
    const e = await events();
    // A key each for what the keyboard has (characters it lacks may come as input-method text).
    const ascii = (t: string) => t.replace(/[^\x20-\x7e]/g, '');
    const downs = of(e, 'keydown').filter((k) => k.key !== 'Shift');
    expect(ascii(downs.map((k) => k.key!).join(''))).toBe(ascii(text));
    expect(e.filter((k) => k.type.startsWith('key')).every((k) => k.trusted)).toBe(true);
    expect(of(e, 'keydown').find((k) => k.key === 'H')).toMatchObject({ shift: true, code: 'KeyH' });
  });

  it('presses shortcuts with modifiers: Control+A selects, copy answers the selection', async () => {
    expect((await call('POST', 'keyboard/shortcut', { keys: ['Control', 'a'], holdTime: 30 })).status).toBe(200);
    const e = await events();
    expect(of(e, 'keydown').map((k) => [k.key, k.ctrl, k.trusted])).toEqual([
      ['Control', true, true],
      ['a', true, true],
    ]);
    expect(of(e, 'keyup').map((k) => k.key)).toEqual(['a', 'Control']);
    const copied = await call('POST', 'copy');
    expect(copied.status).toBe(200);
    expect(copied.body).toEqual({ data: { text: 'Hello, World! 123 <a&b> "quoted" é' } });
    expect(of(await events(), 'copy')[0]).toMatchObject({ trusted: true });
    // Shift+End from the start selects to the end of the line.
    expect((await call('POST', 'keyboard/shortcut', { keys: ['Home'] })).status).toBe(200);
    expect((await call('POST', 'keyboard/shortcut', { keys: ['Shift', 'End'] })).status).toBe(200);
    expect(await probe.eval<number[]>("[document.getElementById('text').selectionStart, document.getElementById('text').selectionEnd]")).toEqual([0, 34]);
    await events();
  });

  it('reads, writes and pastes the clipboard', async () => {
    expect((await call('POST', 'clipboard', { text: 'from the API ✓' })).status).toBe(200);
    expect((await call('GET', 'clipboard')).body).toEqual({ data: { text: 'from the API ✓' } });
    await probe.eval("(() => { const t = document.getElementById('text'); t.value = ''; t.focus(); })()");
    expect((await call('POST', 'paste', { text: 'pasted text' })).status).toBe(200);
    await untilPasses(async () => expect(await probe.eval<string>("document.getElementById('text').value")).toBe('pasted text'));
    const paste = of(await events(), 'paste')[0];
    expect(paste).toMatchObject({ trusted: true, text: 'pasted text' });
    expect((await call('GET', 'clipboard')).body).toEqual({ data: { text: 'pasted text' } });
    // An empty string clears it.
    expect((await call('POST', 'clipboard', { text: '' })).status).toBe(200);
    expect((await call('GET', 'clipboard')).body).toEqual({ data: { text: '' } });
  });

  it('copies a selection of the page; nothing selected copies nothing', async () => {
    await probe.eval("(() => { document.activeElement.blur(); getSelection().selectAllChildren(document.getElementById('sel')); })()");
    expect((await call('POST', 'copy')).body).toEqual({ data: { text: 'Selectable paragraph' } });
    await probe.eval('getSelection().removeAllRanges()');
    expect((await call('POST', 'copy')).body).toEqual({ data: { text: '' } });
    await events();
  });

  it('takes a screenshot of the page at the viewport size', async () => {
    const res = await call('GET', 'screenshot');
    expect(res.status).toBe(200);
    expect(res.type).toBe('image/png');
    const png = Buffer.from(res.body as Uint8Array);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([VIEWPORT.width, VIEWPORT.height]);
  });

  it('clicks what it sees in the screenshot: a point found there is the point clicked', async () => {
    // A target the test places nowhere in particular and then looks for, as an agent would.
    const colour: [number, number, number] = [10, 100, 200];
    await probe.eval(
      `(() => { const t = document.createElement('div'); t.id = 'target'; t.style.cssText = 'position:fixed;left:733px;top:611px;width:31px;height:17px;background:rgb(${colour})'; document.body.append(t); })()`,
    );
    try {
      const box = await untilPasses(async () => {
        const found = findColour(decodePng((await call('GET', 'screenshot')).body), colour);
        expect(found).toBeDefined();
        return found!;
      });
      // One screenshot pixel is one CSS pixel of the page, the toolbar not counted.
      expect(box).toEqual({ x: 733, y: 611, w: 31, h: 17 });
      const at = centre(box);
      expect((await call('POST', 'mouse/click', at)).status).toBe(200);
      const e = await untilPasses(async () => {
        const got = await events();
        expect(of(got, 'click')).toHaveLength(1);
        return got;
      });
      expect(of(e, 'click')[0]).toMatchObject({ x: at.x, y: at.y, trusted: true, target: 'target' });
    } finally {
      await probe.eval("document.getElementById('target').remove()");
    }
  });

  it('clicks an element named by a selector (the vendor form), waiting for it and scrolling to it', async () => {
    expect((await call('POST', 'mouse/click', { selector: '#button' })).status).toBe(200);
    let e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'click')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'click')[0]).toMatchObject({ ...centre(BOX.button), trusted: true, target: 'button' });

    // Three matches that appear 300 ms from now; the third is clicked, under the wire name `timeout`.
    await probe.eval(
      "setTimeout(() => [0, 1, 2].forEach((i) => { const p = document.createElement('div'); p.id = 'pick' + i; p.className = 'pick'; p.style.cssText = `position:absolute;left:${650 + i * 60}px;top:500px;width:40px;height:40px`; document.body.append(p); }), 300)",
    );
    expect((await call('POST', 'mouse/click', { selector: '.pick', index: 2, timeout: 5000 })).status).toBe(200);
    e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'click')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'click')[0]).toMatchObject({ x: 770 + 20, y: 520, trusted: true, target: 'pick2' });

    // Below the fold: scrolled into view, then clicked.
    await probe.eval(
      "(() => { const f = document.createElement('div'); f.id = 'far'; f.style.cssText = 'position:absolute;left:40px;top:3000px;width:50px;height:50px'; document.body.append(f); })()",
    );
    expect((await call('POST', 'mouse/click', { selector: '#far', selectorTimeoutMs: 2000 })).status).toBe(200);
    e = await untilPasses(async () => {
      const got = await events();
      expect(of(got, 'click')).toHaveLength(1);
      return got;
    });
    expect(of(e, 'click')[0]).toMatchObject({ trusted: true, target: 'far' });
    expect(await probe.eval<number>('scrollY')).toBeGreaterThan(2000);
    await probe.eval("(() => { document.querySelectorAll('.pick, #far').forEach((n) => n.remove()); scrollTo(0, 0); })()");

    for (const [body, message] of [
      [{ selector: '#nothing', selectorTimeoutMs: 200 }, 'no element matches "#nothing"'],
      [{ selector: '.pick', index: 5, selectorTimeoutMs: 100 }, 'no element matches ".pick" (index 5)'],
      [{ selector: '#button', index: 1, selectorTimeoutMs: 100 }, 'only 1 element match "#button" (index 1)'],
      [{ selector: 'div[[' }, 'not a valid CSS selector'],
      [{ selector: '#button', x: 10, y: 10 }, 'not both'],
      [{ x: 10 }, 'Give x and y, or a selector'],
      [{ x: 10, y: 10, index: 1 }, 'index goes with a selector'],
      [{ selector: '#button', timeout: 10, selectorTimeoutMs: 10 }, 'not both'],
    ] as const) {
      const res = await call('POST', 'mouse/click', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toContain(message);
    }
    expect(of(await events(), 'click')).toHaveLength(0);
  });

  it("scrolls through the browser's input pipeline with useOs false, to the pixel", async () => {
    expect((await call('POST', 'scroll', { x: 600, y: 400, deltaY: 50, useOs: false, steps: 0 })).status).toBe(200);
    await untilPasses(async () => expect(await probe.eval<number>('scrollY')).toBe(50));
    expect(of(await events(), 'wheel').every((w) => w.trusted && w.x === 600 && w.y === 400)).toBe(true);
    // The OS wheel turns in 120-pixel notches; a headless session has no OS and scrolls exactly.
    expect((await call('POST', 'scroll', { x: 600, y: 400, deltaY: 50, useOs: true })).status).toBe(200);
    await untilPasses(async () => expect(await probe.eval<number>('scrollY')).toBe(headless ? 100 : 170));
    await probe.eval('scrollTo(0, 0)');
    await untilPasses(async () => expect(await probe.eval<number>('scrollY')).toBe(0));
    await events();
  });

  it('goes to a URL in the active page', async () => {
    expect((await call('POST', 'goto', { url: fixtures.url('/colour/red') })).status).toBe(200);
    expect(await probe.eval<string>('location.pathname', '/colour/red')).toBe('/colour/red');
    expect((await call('POST', 'goto', { url: fixtures.url('/input') })).status).toBe(200);
    expect(await probe.eval<string>('location.pathname', '/input')).toBe('/input');
  });

  it('delivers a click sent while a page has not painted yet (it is not dropped)', async () => {
    // As a session's first page does: a blank tab navigates; the page holds its main
    // thread for 1.5 s before its first paint, and the click arrives before that.
    const { targetId } = await probe.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    try {
      await probe.eval(`location.href = ${JSON.stringify(fixtures.url('/slow-input'))}`, 'about:blank');
      // Until the tab is on /slow-input (committed): its 1.5 s hold starts with the parsing.
      await untilPasses(async () => expect((await probe.pages()).find((p) => p.targetId === targetId)?.url).toContain('/slow-input'));
      const at = centre(BOX.button);
      expect((await call('POST', 'mouse/click', at)).status).toBe(200);
      const e = await untilPasses(async () => {
        const got = await events('/slow-input');
        expect(of(got, 'click')).toHaveLength(1);
        return got;
      });
      expect(of(e, 'click')[0]).toMatchObject({ x: at.x, y: at.y, trusted: true, target: 'button' });
    } finally {
      await probe.send('Target.closeTarget', { targetId });
    }
  });

  it('refuses coordinates off the screenshot, unknown keys, empty text and non-web URLs with 400', async () => {
    const huge = { x: 100_000, y: 10 };
    for (const [path, body] of [
      ['mouse/click', huge],
      ['mouse/move', { x: 10, y: 100_000 }],
      ['mouse/doubleClick', huge],
      ['mouse/down', huge],
      ['mouse/up', huge],
      ['scroll', { ...huge, deltaY: 10 }],
      ['drag-and-drop', { startX: 10, startY: 10, endX: 100_000, endY: 10 }],
      ['mouse/click', { x: -1, y: 10 }],
      // The screenshot's last row is y 767: the screen below the page is not the page.
      ['mouse/click', { x: 10, y: VIEWPORT.height }],
      ['mouse/move', { x: VIEWPORT.width, y: 10 }],
      ['keyboard/shortcut', { keys: ['Control', 'NoSuchKey'] }],
      ['keyboard/type', { text: '' }],
      // 3000 characters 30 ms apart: 93 s holding the session's input; 20,000 at once, 20 s;
      // 10 a second apart, just over 10 s.
      ['keyboard/type', { text: 'a'.repeat(3000), delay: 30 }],
      ['keyboard/type', { text: 'a'.repeat(20_000) }],
      ['keyboard/type', { text: 'a'.repeat(10), delay: 1000 }],
      ['paste', { text: '' }],
      ['goto', { url: 'ftp://example.org/file' }],
    ] as const) {
      const res = await call('POST', path, body);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.error.code).toBe(400);
    }
    expect((await call('POST', 'mouse/click', { x: 10, y: 10 }, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('counts each operation as a step (a refused one is none), 404 once deleted, 409 once ended otherwise', async () => {
    // This test's page probe talks CDP, which counts too: a session nobody else drives.
    probe.close();
    expect((await server.request(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(200);
    const other = await createSession(server, { session: { recording: { active: false } }, browser: { headless: { active: headless }, viewport: VIEWPORT } });
    for (const [method, path, body] of [
      ['POST', 'mouse/move', { x: 50, y: 200 }],
      ['POST', 'mouse/click', { x: 50, y: 200 }],
      ['POST', 'keyboard/type', { text: 'ab' }],
      ['GET', 'screenshot', undefined],
      ['POST', 'mouse/click', { x: 100_000, y: 1 }],
    ] as const) {
      await call(method, path, body, other.id);
    }
    expect((await server.request(`/v1/sessions/${other.id}`, { method: 'DELETE' })).status).toBe(200);
    const completed = await untilPasses(async () => {
      const ev = (await eventsOf(server.db, other.id)).find((e) => e.type === 'session.completed');
      expect(ev).toBeDefined();
      return ev!;
    });
    expect(completed.data.steps).toBe(4);
    // Ended through DELETE: gone from the API, as GET /v1/sessions/{id} says.
    expect((await call('POST', 'mouse/click', { x: 10, y: 10 }, other.id)).status).toBe(404);
    // Ended otherwise (a timeout, a crash): 409.
    const [{ project_id }] = await server.db.query<{ project_id: string }>('SELECT project_id FROM sessions WHERE id = $1', [other.id]);
    const ended = '11111111-2222-4333-8444-555555555555';
    await server.db.query(
      `INSERT INTO sessions (id, project_id, status, node_id, configuration, cdp_token, live_view_token, ended_at)
       VALUES ($1, $2, 'completed', 'elsewhere', '{}', 'x', 'y', now())`,
      [ended, project_id],
    );
    const res = await call('POST', 'mouse/click', { x: 10, y: 10 }, ended);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/not running/);
  });
});
