/** The product has no stock left. Mapped to 409 by the lock errors filter. */
export class SoldOutError extends Error {
  constructor(readonly sku: string) {
    super(`${sku} is sold out`);
    this.name = 'SoldOutError';
  }
}

/** The product does not exist. Mapped to 404. */
export class UnknownProductError extends Error {
  constructor(readonly sku: string) {
    super(`no product ${sku}`);
    this.name = 'UnknownProductError';
  }
}

/**
 * A write carried a fencing token lower than the last one seen for the row: its lock was lost (lease
 * expired, process paused) and another holder has written since. Mapped to 409.
 */
export class StaleFencingTokenError extends Error {
  constructor(
    readonly sku: string,
    readonly token: number,
  ) {
    super(`write to ${sku} with fencing token ${token} refused: a newer lock holder has written`);
    this.name = 'StaleFencingTokenError';
  }
}
