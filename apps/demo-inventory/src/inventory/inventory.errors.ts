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

