// Identifiers: a prefix and a ULID-like body (48-bit millisecond time + 80 random bits in
// Crockford base32, 26 characters), so ids sort roughly by creation and never collide.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function ulid(now: number = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(10);
  let rand = '';
  // 80 bits → 16 base32 characters, 5 bits at a time.
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      rand += ALPHABET[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
    acc &= (1 << bits) - 1;
  }
  return time + rand;
}

export const newEventId = () => `evt_${ulid()}`;
export const newWebhookId = () => `wh_${ulid()}`;
