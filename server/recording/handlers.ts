// The Recordings operations of the contract, and the signed download link (file_link) the
// listing hands out, served outside /v1 so a player or a browser can open it without a key.
import type { Hono } from 'hono';
import type { Db } from '../store/db.js';
import type { Secrets } from '../secrets/index.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { SessionLookup } from '../sessions/index.js';
import type { Recorder } from './recorder.js';
import type { BlobStorage } from '../storage/blobs.js';
import { readRanged } from '../storage/ranged.js';
import { LinkSigner } from '../storage/signed-links.js';
import * as store from './store.js';

export type RecordingHandlers = Pick<
  AppHandlers,
  'listSessionRecordings' | 'fetchPrimaryRecording' | 'pauseSessionRecording' | 'resumeSessionRecording' | 'deleteSessionRecording'
>;

export interface RecordingDeps {
  db: Db;
  sessions: SessionLookup;
  recorder: Recorder;
  storage: BlobStorage;
  publicUrl: string;
}

const OFF = 'Recording is off for this session';
const NOT_RUNNING = 'Session is not running';
const DISCARDED = 'The recording of this session was deleted';
const NOT_RECORDING = 'This session is not being recorded (its recording could not start)';
const LINK_PATH = /^([0-9a-f-]{36})\.mp4$/;

export class RecordingLinks {
  private readonly signer: LinkSigner;

  constructor(
    secrets: Secrets,
    private readonly publicUrl: string,
  ) {
    this.signer = new LinkSigner(secrets.derive('recording links'));
  }

  url(id: string): string {
    return `${this.publicUrl}/files/recordings/${id}.mp4?${this.signer.query(id)}`;
  }

  verify(id: string, expires: string | undefined, signature: string | undefined): boolean {
    return this.signer.verify(id, expires, signature);
  }
}

export function recordingHandlers(d: RecordingDeps, links: RecordingLinks): RecordingHandlers {
  const { db } = d;
  const running = (projectId: string, sessionId: string) => {
    const s = d.sessions.get(sessionId);
    return s && s.projectId === projectId ? s : undefined;
  };

  return {
    async listSessionRecordings(req, ctx) {
      const facts = await store.sessionFacts(db, ctx.projectId, req.params.session_id);
      if (!facts) return fail(404, 'Session not found');
      const rows = await store.listRecordings(db, ctx.projectId, facts.id);
      const items = rows.map((r, i) => ({
        id: r.id,
        is_primary: r.is_primary,
        file_link: links.url(r.id),
        suggested_file_name: `session-${facts.id}${r.is_primary ? '' : `-${i}`}.mp4`,
        duration: r.duration_ms / 1000,
        size: r.size_bytes,
        created_at: r.created_at.toISOString(),
      }));
      return { status: 200, body: { data: { count: items.length, items } } };
    },

    async fetchPrimaryRecording(req, ctx) {
      const facts = await store.sessionFacts(db, ctx.projectId, req.params.session_id);
      if (!facts) return fail(404, 'Session not found');
      const row = await store.findRecording(db, ctx.projectId, facts.id, 'primary');
      if (!row) {
        return fail(
          404,
          !facts.recording
            ? OFF
            : facts.status === 'running' || facts.status === 'starting'
              ? 'The recording is encoded when the session ends'
              : 'The session has no recording',
        );
      }
      const out = await readRanged(d.storage, row.storage_key, req.headers.get('range'));
      if (!out) return fail(404, 'The recording file is missing');
      if (out.status === 416) return { ...fail(416, 'Range not satisfiable'), headers: { 'Content-Range': `bytes */${out.size}` } };
      if (out.status === 206) return { status: 206, contentType: 'video/mp4', body: out.body, headers: out.headers };
      return { status: 200, contentType: 'video/mp4', body: out.body, headers: out.headers };
    },

    async pauseSessionRecording(req, ctx) {
      const facts = await store.sessionFacts(db, ctx.projectId, req.params.session_id);
      if (!facts) return fail(404, 'Session not found');
      if (!facts.recording) return fail(409, OFF);
      if (!running(ctx.projectId, facts.id)) return fail(409, NOT_RUNNING);
      const state = d.recorder.pause(facts.id);
      if (state === 'discarded') return fail(409, DISCARDED);
      if (!state) return fail(409, NOT_RECORDING);
      return { status: 200, body: { data: { status: 'paused' } } };
    },

    async resumeSessionRecording(req, ctx) {
      const facts = await store.sessionFacts(db, ctx.projectId, req.params.session_id);
      if (!facts) return fail(404, 'Session not found');
      if (!facts.recording) return fail(409, OFF);
      if (!running(ctx.projectId, facts.id)) return fail(409, NOT_RUNNING);
      const state = d.recorder.resume(facts.id);
      if (state === 'discarded') return fail(409, DISCARDED);
      if (!state) return fail(409, NOT_RECORDING);
      return { status: 200, body: { data: { status: 'recording' } } };
    },

    async deleteSessionRecording(req, ctx) {
      const facts = await store.sessionFacts(db, ctx.projectId, req.params.session_id);
      if (!facts) return fail(404, 'Session not found');
      if (!facts.recording) return fail(409, OFF);
      const recordingId = req.params.recording_id;
      const row = await store.findRecording(db, ctx.projectId, facts.id, recordingId);
      if (row) {
        // The row first: once it is gone nothing hands out the file, then the file goes.
        await store.deleteRecording(db, ctx.projectId, row.id);
        await d.storage.delete(row.storage_key);
        return { status: 200, body: { data: { status: 'deleted' } } };
      }
      // Still recording (or encoding): what there is is discarded and nothing more recorded.
      if (recordingId === 'primary' && d.recorder.discard(facts.id)) return { status: 200, body: { data: { status: 'deleted' } } };
      return fail(404, 'Recording not found');
    },
  };
}

/** GET /files/recordings/{id}.mp4?expires&signature: the file_link of a listing. */
export function recordingLinkRoute(app: Hono, d: Pick<RecordingDeps, 'db' | 'storage'>, links: RecordingLinks): void {
  app.get('/files/recordings/:file', async (c) => {
    const m = LINK_PATH.exec(c.req.param('file'));
    const id = m?.[1];
    const plain = (status: 400 | 403 | 404 | 416, message: string, headers: Record<string, string> = {}) =>
      c.json({ error: { code: status, message } }, status, headers);
    if (!id) return plain(404, 'Not found');
    if (!links.verify(id, c.req.query('expires'), c.req.query('signature')))
      return plain(403, 'This link is not valid or has expired; list the recordings again for a fresh one');
    const row = await store.recordingById(d.db, id);
    if (!row) return plain(404, 'Recording not found');
    const out = await readRanged(d.storage, row.storage_key, c.req.header('range') ?? null);
    if (!out) return plain(404, 'Recording not found');
    if (out.status === 416) return plain(416, 'Range not satisfiable', { 'Content-Range': `bytes */${out.size}` });
    return new Response(out.body, {
      status: out.status,
      headers: {
        ...out.headers,
        'content-type': 'video/mp4',
        'content-disposition': `inline; filename="session-${row.session_id}.mp4"`,
        'cache-control': 'private, no-store',
      },
    });
  });
}
