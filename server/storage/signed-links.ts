import { createHmac, timingSafeEqual } from 'node:crypto';
// Signed, short-lived links to stored files (recordings, task artifacts), served outside /v1
// so a player, a browser or a webhook receiver opens them without a key: an HMAC of the id
// and the expiry under the installation's secret of that kind of link.

/** Links expire at the end of the next full hour, one to two hours from now (in seconds): the same link all hour, so two listings agree. */
export function linkExpiry(now = Date.now()): number {
  return (Math.floor(now / 3_600_000) + 2) * 3_600;
}

export class LinkSigner {
  private secret: Promise<string> | undefined;

  /**
   * `loadSecret` reads (or makes, whichever node asks first) the secret; `prefix` goes before
   * the id in what is signed, so two kinds of link never sign the same text.
   */
  constructor(
    private readonly loadSecret: () => Promise<string>,
    private readonly prefix = '',
  ) {}

  /** `expires=…&signature=…` for the id, valid until linkExpiry(). */
  async query(id: string): Promise<string> {
    const expires = linkExpiry();
    return `expires=${expires}&signature=${await this.sign(id, expires)}`;
  }

  async verify(id: string, expires: string | undefined, signature: string | undefined): Promise<boolean> {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || Number(expires) * 1000 < Date.now()) return false;
    const want = Buffer.from(await this.sign(id, Number(expires)));
    const got = Buffer.from(signature);
    return want.length === got.length && timingSafeEqual(want, got);
  }

  private async sign(id: string, expires: number): Promise<string> {
    this.secret ??= this.loadSecret();
    this.secret.catch(() => (this.secret = undefined));
    return createHmac('sha256', await this.secret).update(`${this.prefix}${id}.${expires}`).digest('base64url');
  }
}
