import 'reflect-metadata';
import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { demoConfig } from './config/demo-config';

/** One instance of the shop. `run-demo` starts several against one database. */
async function bootstrap(): Promise<void> {
  const config = demoConfig();
  const app = await NestFactory.create(AppModule.register(config), { logger: ['error', 'warn'] });
  app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }));
  app.enableShutdownHooks();
  await app.listen(config.port, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  // run-demo reads this line to find the instance (port 0 picks a free one).
  process.stdout.write(`listening ${address.port} ${config.instance} ${config.inventoryLock}\n`);
}

bootstrap().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
