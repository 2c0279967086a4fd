import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Product } from '../inventory/product.entity';
import { BoardController } from './board.controller';

/** The live lock board (`GET /board`): who holds the shop's keys and who waits, from the library's operator endpoints. */
@Module({
  imports: [TypeOrmModule.forFeature([Product])],
  controllers: [BoardController],
})
export class BoardModule {}
