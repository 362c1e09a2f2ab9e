import { describe, expect, it } from 'vitest';
import { onlyUrlIn } from './prompt-url.js';

describe('onlyUrlIn', () => {
  it('finds the one URL of a prompt, without the punctuation around it', () => {
    expect(onlyUrlIn('How many products are on https://shop.example.com/table?')).toBe('https://shop.example.com/table');
    expect(onlyUrlIn('Open (http://a.example/x?q=1&r=2), then read it.')).toBe('http://a.example/x?q=1&r=2');
    expect(onlyUrlIn('Go to "https://a.example/" and again https://a.example/.')).toBe('https://a.example/');
  });

  it('finds none in a prompt without one or with several, and ignores other schemes', () => {
    expect(onlyUrlIn('Find the cheapest flight')).toBeUndefined();
    expect(onlyUrlIn('Compare https://a.example and https://b.example')).toBeUndefined();
    expect(onlyUrlIn('Read ftp://files.example/a.txt or file:///etc/passwd')).toBeUndefined();
  });
});
