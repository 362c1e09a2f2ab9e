import { createHmac, timingSafeEqual } from 'node:crypto';
// Signed, short-lived links to stored files (recordings, task artifacts), served outside /v1
// so a player, a browser or a webhook receiver opens them without a key: an HMAC of the id
// and the expiry under a key of that kind of link, derived from the installation's secrets
// key (SECRETS_KEY): nothing stored that a copy of the database could sign links with.

/** Links expire at the end of the next full hour, one to two hours from now (in seconds): the same link all hour, so two listings agree. */
export function linkExpiry(now = Date.now()): number {
  return (Math.floor(now / 3_600_000) + 2) * 3_600;
}

export class LinkSigner {
  /** `key`: that kind of link's (Secrets.derive); `prefix` goes before the id in what is
   * signed, so two kinds of link never sign the same text. */
  constructor(
    private readonly key: Buffer,
    private readonly prefix = '',
  ) {}

  /** `expires=…&signature=…` for the id, valid until linkExpiry(). */
  query(id: string): string {
    const expires = linkExpiry();
    return `expires=${expires}&signature=${this.sign(id, expires)}`;
  }

  verify(id: string, expires: string | undefined, signature: string | undefined): boolean {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || Number(expires) * 1000 < Date.now()) return false;
    const want = Buffer.from(this.sign(id, Number(expires)));
    const got = Buffer.from(signature);
    return want.length === got.length && timingSafeEqual(want, got);
  }

  private sign(id: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${this.prefix}${id}.${expires}`).digest('base64url');
  }
}
