// The live view and the per-session screencast it shares with the recorder.
export { LiveView, type LiveViewOptions } from './live-view.js';
export { Screencasts, ScreencastHub, type Frame, type FrameMeta, type Tab } from './screencast.js';
export { PageSessions, activePage } from '../browser/pages.js';
