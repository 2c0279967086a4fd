import { IsIn, IsInt, IsString, Length, Matches, Max, Min } from 'class-validator';

/** How the purchase is protected. */
export const BUY_MODES = ['unguarded', 'atomic', 'locked', 'optimistic', 'pessimistic'] as const;
export type BuyMode = (typeof BUY_MODES)[number];

const SKU = /^[\w.:-]+$/;
const SKU_MESSAGE = 'sku may contain letters, digits, ".", ":", "_" and "-"';

export class BuyDto {
  @IsString()
  @Length(1, 64)
  @Matches(SKU, { message: SKU_MESSAGE })
  sku!: string;

  @IsString()
  @Length(1, 64)
  buyer!: string;

  @IsIn(BUY_MODES)
  mode!: BuyMode;
}

export class CreateProductDto {
  @IsString()
  @Length(1, 64)
  @Matches(SKU, { message: SKU_MESSAGE })
  sku!: string;

  @IsString()
  @Length(1, 200)
  name!: string;

  @IsInt()
  @Min(0)
  @Max(1_000_000)
  stock!: number;
}
