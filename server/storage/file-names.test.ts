// Names from outside made safe to write and to hand back, and made unique in a session.
import { describe, expect, it } from 'vitest';
import { contentTypeOf, safeFileName, uniqueName } from './file-names.js';

describe('file names', () => {
  it('keeps one printable, visible segment of bounded length', () => {
    expect(safeFileName('../../etc/passwd', 'upload')).toBe('passwd');
    expect(safeFileName('C:\\Users\\me\\cv.pdf', 'upload')).toBe('cv.pdf');
    expect(safeFileName('dir/', 'upload')).toBe('upload');
    expect(safeFileName('..', 'upload')).toBe('upload');
    expect(safeFileName(' ..hidden.txt ', 'upload')).toBe('hidden.txt');
    expect(safeFileName('tab\there\u0000.txt', 'upload')).toBe('tabhere.txt');
    expect(safeFileName('Cafe\u0301.txt', 'upload')).toBe('Café.txt'); // NFC
    const long = safeFileName(`${'ü'.repeat(300)}.tar.gz`, 'upload');
    expect(long).toBe(`${'ü'.repeat(98)}.gz`);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(200);
    // An "extension" too long to be one is cut with the rest.
    expect(Buffer.byteLength(safeFileName(`a.${'b'.repeat(300)}`, 'upload'))).toBe(200);
  });

  it('numbers a name already taken, before its extension', () => {
    expect(uniqueName('report.csv', new Set())).toBe('report.csv');
    expect(uniqueName('report.csv', new Set(['report.csv']))).toBe('report (1).csv');
    expect(uniqueName('report.csv', new Set(['report.csv', 'report (1).csv']))).toBe('report (2).csv');
    expect(uniqueName('README', new Set(['README']))).toBe('README (1)');
  });

  it('guesses the content type from the extension', () => {
    expect(contentTypeOf('a.pdf')).toBe('application/pdf');
    expect(contentTypeOf('a.csv')).toBe('text/csv; charset=utf-8');
    expect(contentTypeOf('noextension')).toBe('application/octet-stream');
  });
});
