import type { DataSource } from 'typeorm';

/** What the database strategies use of a TypeORM `DataSource` (the one `@nestjs/typeorm` provides fits). */
export type LockDataSource = Pick<DataSource, 'query' | 'createQueryRunner' | 'options' | 'isInitialized' | 'initialize' | 'destroy'>;
