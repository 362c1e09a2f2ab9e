// Comparing a presented token with the one on record (CDP, live view).
import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant time: hashing first gives equal lengths, so the time taken says nothing about the token. */
export function sameToken(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
